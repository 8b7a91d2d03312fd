//! A target that burns CPU while another is measured: the other target's
//! runs made meanwhile are marked disturbed (raw.csv, status, summary) and
//! the report names the burner; a quiet target disturbs nothing.

use crate::common::zoo;
use loadlab::results::raw;

use super::support::{serial, summary_json, sweep};

#[test]
fn runs_beside_a_spinning_target_are_marked_disturbed_and_the_spinner_named() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    // Variant b polls its listening socket without sleeping, from the start.
    let spinner = format!(
        "cmd:python3 {} {{port}} {{root}} b 0",
        zoo::path("busy_when_idle.py").display(),
    );
    let (stdout, stderr, code) = sweep(
        &[
            "-T",
            &spinner,
            "-T",
            "model:event-loop",
            "--path",
            "/index.html",
            "--concurrency",
            "1",
            "--requests",
            "200",
            "--repeat",
            "2",
            "--warmup-runs",
            "0",
            "--no-check",
        ],
        &out,
    );
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    let measured = || rows.iter().filter(|r| r.is_measured());
    for r in measured().filter(|r| r.target == "model:event-loop") {
        let by = r.disturbed_by.as_deref().unwrap_or("");
        assert!(by.starts_with(&format!("{spinner} (")), "{r:?}");
    }
    // The spinner's own runs: event-loop sat idle beside them.
    for r in measured().filter(|r| r.target == spinner) {
        assert_eq!(r.disturbed_by, None, "{r:?}");
    }
    let json = summary_json(&out);
    let el = json["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["target"] == "model:event-loop")
        .unwrap();
    assert_eq!(el["disturbed"], true, "{el}");
    assert!(
        stdout.contains(&format!("{spinner} burned CPU while it was not under load")),
        "{stdout}"
    );
    assert!(stdout.contains("2 runs of other targets"), "{stdout}");
}
