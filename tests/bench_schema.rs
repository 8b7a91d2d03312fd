//! Holds `loadlab bench --format json` to the checked-in JSON Schema
//! (docs/schema/bench-v3.schema.json) (validator in tests/common/schema.rs), and `--format csv` to the documented columns
//! (docs/schema/bench-csv.md).

use crate::common;

use std::process::Command;

use common::*;
use serde_json::Value;

fn validate(doc: &Value) -> Vec<String> {
    common::schema::validate("bench-v3.schema.json", doc)
}

#[test]
fn json_output_matches_the_checked_in_schema() {
    let server = TestServer::start("event-loop", &[]);
    for extra in [
        &["-k"][..],
        &["--rate", "2000"][..],
        &["-t", "0.3"][..],
        &["--shard", "1/2", "--start-at", "2020-01-01T00:00:00Z"][..],
    ] {
        let out = Command::new(loadlab_bin())
            .args(["bench", "-q", "-n", "200", "-c", "4", "--format", "json"])
            .args(extra)
            .arg(server.url("/500B.html"))
            .output()
            .unwrap();
        assert!(out.status.success());
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let errs = validate(&doc);
        assert!(errs.is_empty(), "{extra:?}: {errs:#?}");
        assert!(
            doc["series"]["complete"].is_array(),
            "{extra:?}: v2 has a series"
        );
        // Every run records its window; a shard also says which it is.
        assert!(doc["window"]["start_unix_ms"].is_number(), "{extra:?}");
        assert_eq!(doc["shard"].is_object(), extra[0] == "--shard", "{extra:?}");
    }
}

#[test]
fn the_validator_rejects_what_the_schema_forbids() {
    let server = TestServer::start("event-loop", &[]);
    let out = Command::new(loadlab_bin())
        .args([
            "bench",
            "-q",
            "-n",
            "10",
            "--format",
            "json",
            &server.url("/"),
        ])
        .output()
        .unwrap();
    let mut doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["unexpected"] = Value::from(1);
    doc["complete"] = Value::from("ten");
    doc.as_object_mut().unwrap().remove("latency_ms");
    assert_eq!(validate(&doc).len(), 3, "{:#?}", validate(&doc));
}

#[test]
fn csv_columns_are_the_documented_ones_including_p99_99() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/schema/bench-csv.md"
    ))
    .unwrap();
    // Table rows of the form "| `column` | meaning |".
    let documented: Vec<&str> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split_once('`').map(|(c, _)| c))
        .collect();
    let server = TestServer::start("event-loop", &[]);
    let out = Command::new(loadlab_bin())
        .args(["bench", "-q", "-n", "300", "-c", "3", "--format", "csv"])
        .arg(server.url("/500B.html"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut rdr = csv::Reader::from_reader(&out.stdout[..]);
    let header: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header, documented,
        "docs/schema/bench-csv.md lists the columns in order"
    );
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1);
    let col = |name: &str| -> f64 {
        let i = header.iter().position(|h| h == name).unwrap();
        rows[0][i].parse().unwrap()
    };
    assert_eq!(col("complete"), 300.0);
    assert!(col("p99_ms") <= col("p99_9_ms"));
    assert!(col("p99_9_ms") <= col("p99_99_ms"));
    assert!(col("p99_99_ms") <= col("max_ms"));
}
