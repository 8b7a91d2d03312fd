//! Stress directories as sides: one cell per operation, size, client pool
//! and model, each measured once.

use std::process::Command;

use super::support::*;
use crate::common::loadlab_bin;

fn stress(out: &std::path::Path, tmp: &std::path::Path) {
    let o = Command::new(loadlab_bin())
        .args([
            "stress",
            "--ops",
            "download",
            "--sizes",
            "64K",
            "--clients",
            "1,2",
        ])
        .args([
            "--server-workers",
            "1",
            "--models",
            "event-loop",
            "--timeout",
            "30s",
            "--out",
        ])
        .arg(out)
        .env("TMPDIR", tmp)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn stress_directories_compare_cell_by_cell_with_one_run_each() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    stress(&a, dir.path());
    stress(&b, dir.path());
    let doc = compare_json(&[a.to_str().unwrap(), "--vs", b.to_str().unwrap()]);
    assert_eq!(doc["a"]["kind"], "stress");
    assert_eq!(doc["cells"].as_array().unwrap().len(), 2, "{doc}");
    let rows = verdicts(&doc);
    assert!(rows.iter().any(|r| r.1 == "aggregate"), "{rows:?}");
    for (_, m, v, _) in rows {
        assert_eq!(v, "~ (one run)", "{m}");
    }
}
