//! A sweep checks each target's framing and connections before its first
//! run: the report's findings open with a broken server's defect and what
//! it does to the numbers, a Targets section after them gives its evidence
//! and fix, sweep.json keeps the diagnosis, and `--no-check` leaves it out.

use crate::common::zoo;
use loadlab::results::sweep_info::{SweepInfo, SWEEP_JSON};

use super::support::{serial, sweep};

fn info(out: &std::path::Path) -> SweepInfo {
    serde_json::from_slice(&std::fs::read(out.join(SWEEP_JSON)).unwrap()).unwrap()
}

#[test]
fn a_sweep_opens_with_each_target_s_diagnosis() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let extra = 2 + (std::process::id() % 5) * 2;
    let broken = format!(
        "cmd:python3 {} {{port}} {extra}",
        zoo::path("extra_bytes.py").display()
    );
    let common = ["--concurrency", "2", "--requests", "100", "--repeat", "1"];
    let mut args = vec!["-T", &broken, "-T", "model:event-loop"];
    args.extend(common);
    let (stdout, stderr, code) = sweep(&args, &out);
    assert_eq!(code, 0, "{stderr}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    // The findings open the report, the defect first among them; the
    // Targets section with the evidence follows.
    let targets = md.find("## Targets").expect("a Targets section");
    let findings = md.find("## Findings").unwrap();
    assert!(findings < targets, "Findings first: {md}");
    assert!(
        md[findings..].starts_with(&format!("## Findings\n\n- {broken}")),
        "the defect leads the findings: {md}"
    );
    assert!(
        md.contains(&format!("{extra} bytes after a 6-byte body")),
        "the evidence: {md}"
    );
    assert!(md.contains("model:event-loop**: 13 pass"), "{md}");
    // The findings say what the defect does to the numbers, and the fix.
    assert!(
        stdout.contains("counted as answered, with a violation"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Fix: send exactly Content-Length bytes"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<section id=\"targets\">"), "the page too");
    // Every run recorded its violations and the kernel's counters: the
    // broken server's 100 answers each carried its extra bytes.
    let rows = loadlab::results::raw::read(&out).unwrap();
    for r in rows.iter().filter(|r| r.is_measured() && !r.warmup) {
        let broken_one = r.target == broken;
        assert_eq!(
            r.violations,
            Some(if broken_one { 100 } else { 0 }),
            "{r:?}"
        );
        assert!(r.connections_opened.is_some(), "{r:?}");
        assert!(r.tcp_active_opens.is_some(), "{r:?}");
        if broken_one {
            let kinds = r.violation_kinds.as_deref().unwrap_or("");
            assert_eq!(kinds, "bytes-after-body 100", "{r:?}");
        }
    }
    assert!(
        stdout.contains("100 answers broke a rule (bytes-after-body 100)"),
        "{stdout}"
    );
    let kept = info(&out);
    assert_eq!(kept.diagnoses.len(), 2, "{:?}", kept.diagnoses);
    let d = &kept.diagnoses[0];
    assert!(d.with("fail").any(|c| c.id == "bytes-after-body"), "{d:?}");
    assert_eq!(kept.diagnoses[1].with("fail").count(), 0);

    // --no-check: no diagnosis, no section.
    let bare = dir.path().join("bare");
    let mut args = vec!["-T", "model:event-loop", "--no-check"];
    args.extend(common);
    let (_, stderr, code) = sweep(&args, &bare);
    assert_eq!(code, 0, "{stderr}");
    assert!(info(&bare).diagnoses.is_empty());
    let md = std::fs::read_to_string(bare.join("summary.md")).unwrap();
    assert!(!md.contains("## Targets"), "{md}");
}
