//! Holds summary.json, as `loadlab report DIR` writes it, to the
//! checked-in JSON Schema (docs/schema/summary-v4.schema.json; validator
//! in tests/common/schema.rs): a sweep with failed runs, a skipped target,
//! non-2xx answers and a machine, and an E1 run without machine.json.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::loadlab_bin;
use serde_json::Value;

fn validate(doc: &Value) -> Vec<String> {
    common::schema::validate("summary-v4.schema.json", doc)
}

/// Renders a copy of a golden fixture directory and reads its summary.json.
fn rendered(fixture: &str) -> Value {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/fixtures")
        .join(fixture);
    let tmp = tempfile::tempdir().expect("tempdir");
    for e in std::fs::read_dir(&src).expect("fixture dir") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), tmp.path().join(e.file_name())).expect("copy");
    }
    let out = Command::new(loadlab_bin())
        .arg("report")
        .arg(tmp.path())
        .output()
        .expect("run loadlab report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&std::fs::read(tmp.path().join("summary.json")).expect("summary.json"))
        .expect("summary.json is JSON")
}

#[test]
fn summary_json_matches_the_checked_in_schema() {
    for fixture in ["report-sweep", "report-e1"] {
        let doc = rendered(fixture);
        let errs = validate(&doc);
        assert!(errs.is_empty(), "{fixture}: {errs:#?}");
        assert_eq!(doc["schema"], "loadlab-summary/4");
    }
    // The sweep fixture exercises the nullable fields and the statuses.
    let doc = rendered("report-sweep");
    let confs = doc["configurations"].as_array().expect("configurations");
    assert!(confs.iter().any(|c| c["server_cpu_us_per_req"].is_null()));
    assert!(confs.iter().any(|c| c["status"] == "failed"));
    assert!(!doc["findings"].as_array().expect("findings").is_empty());
}

#[test]
fn the_validator_rejects_what_the_schema_forbids() {
    let mut doc = rendered("report-e1");
    let c = &mut doc["configurations"][0];
    c["status"] = Value::from("fine");
    c["rps_ci95_low"] = Value::from("wide");
    c.as_object_mut().expect("object").remove("rps_mean");
    doc["extra"] = Value::from(1);
    assert_eq!(validate(&doc).len(), 4, "{:#?}", validate(&doc));
}
