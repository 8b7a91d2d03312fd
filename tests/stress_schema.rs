//! Holds `loadlab stress`'s stress.json to the checked-in JSON Schema
//! (docs/schema/stress-v1.schema.json), for a run that starts its own
//! servers and one against `--url`, with the validator in
//! tests/common/schema.rs.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;

fn validate(doc: &Value) -> Vec<String> {
    common::schema::validate("stress-v1.schema.json", doc)
}

/// Runs `loadlab stress ARGS --out DIR` (TMPDIR in a temporary directory)
/// and returns its stress.json.
fn run_stress(args: &[&str]) -> Value {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(loadlab_bin())
        .arg("stress")
        .args(args)
        .args(["--timeout", "60s", "--out"])
        .arg(out_dir.path())
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read(Path::new(out_dir.path()).join("stress.json")).unwrap();
    serde_json::from_slice(&text).unwrap()
}

fn spawned_run() -> Value {
    // model subset: one thread pool and one process pool.
    run_stress(&[
        "--sizes",
        "64K",
        "--clients",
        "1,3",
        "--server-workers",
        "1",
        "--models",
        "thread-pool,prefork",
    ])
}

#[test]
fn spawned_and_url_runs_match_the_checked_in_schema() {
    let doc = spawned_run();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/docs/schema/stress-v1.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(doc["schema"], schema["properties"]["schema"]["const"]);
    assert_eq!(doc["rows"].as_array().unwrap().len(), 8);
    // By default the servers get the first half of the CPUs, the
    // clients the rest, and the notes say so.
    if loadlab::proc::affinity::allowed_cpus().len() >= 2 {
        let notes = doc["notes"].to_string();
        assert!(notes.contains("CPUs split (--cpus "), "{notes}");
    }
    // Each server was checked before its first cell, and passed.
    let diagnoses = doc["diagnoses"].as_array().unwrap();
    let labels: Vec<&str> = diagnoses
        .iter()
        .map(|d| d["target"].as_str().unwrap())
        .collect();
    // model subset: the two models spawned_run asks for, in its order.
    let want = ["model:thread-pool:workers=1", "model:prefork:workers=1"];
    assert_eq!(labels, want);
    for d in diagnoses {
        let checks = d["checks"].as_array().unwrap();
        assert!(checks.iter().all(|c| c["verdict"] != "fail"), "{d}");
        assert!(checks.iter().any(|c| c["verdict"] == "pass"), "{d}");
    }
    let errs = validate(&doc);
    assert!(errs.is_empty(), "spawned: {errs:#?}");

    let files = tempfile::tempdir().unwrap();
    let server = TestServer::start("event-loop", &["--files", files.path().to_str().unwrap()]);
    let doc = run_stress(&[
        "--url",
        &server.url("/files/"),
        "--sizes",
        "64K",
        "--clients",
        "2",
    ]);
    // Nullable fields take their null form here.
    assert!(doc["leftover_temp_files"].is_null());
    assert!(doc["rows"][0]["server_workers"].is_null());
    let errs = validate(&doc);
    assert!(errs.is_empty(), "--url: {errs:#?}");
}

#[test]
fn the_validator_rejects_what_the_schema_forbids() {
    let mut doc = spawned_run();
    doc["unexpected"] = Value::from(1);
    doc["schema"] = Value::from("loadlab.stress/0");
    doc.as_object_mut().unwrap().remove("notes");
    let row = &mut doc["rows"][0];
    row["failed"] = Value::from(-1);
    row["op"] = Value::from("move");
    row["model"] = Value::from("threads");
    row.as_object_mut().unwrap().remove("verified");
    let errs = validate(&doc);
    assert_eq!(errs.len(), 7, "{errs:#?}");
}
