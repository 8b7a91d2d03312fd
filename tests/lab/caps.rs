//! `--max-cell-time`: a server that makes too little progress costs a
//! sweep at most one capped run per target, not hours; its later runs at
//! equal or higher concurrency are listed as not made, and other targets'
//! runs go on.

use std::time::{Duration, Instant};

use crate::common::zoo;
use loadlab::results::raw;

use super::support::{serial, sweep};

#[test]
fn a_run_past_max_cell_time_is_capped_and_the_target_s_heavier_runs_are_not_made() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    // 100 ms an answer, one at a time: 1,000 requests would take 100 s.
    let slow = format!(
        "cmd:python3 {} {{port}} 100",
        zoo::path("slow_answers.py").display()
    );
    let t0 = Instant::now();
    let (stdout, stderr, code) = sweep(
        &[
            "-T",
            &slow,
            "-T",
            "model:event-loop",
            "--concurrency",
            "2,1,4",
            "--requests",
            "1000",
            "--repeat",
            "2",
            "--warmup-runs",
            "0",
            "--max-cell-time",
            "2s",
        ],
        &out,
    );
    let took = t0.elapsed();
    assert_eq!(code, 0, "event-loop measured: {stderr}");
    // One capped run at c = 1, then at most one at c = 2 (made before it,
    // in the order given), each 2 s, plus event-loop's six short runs.
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let rows = raw::read(&out).unwrap();
    let of = |c: u64| -> Vec<&raw::RawRow> {
        rows.iter()
            .filter(|r| r.target.starts_with("cmd:") && r.concurrency == c)
            .collect()
    };
    // c = 2 came first in round 1 and was capped, so everything at c >= 2
    // after it is not made; c = 1 (lower) was still made, and capped.
    let capped: Vec<&raw::RawRow> = rows
        .iter()
        .filter(|r| r.error.starts_with("capped at 2 s (--max-cell-time)"))
        .collect();
    assert!(!capped.is_empty(), "{rows:#?}");
    for r in &capped {
        assert!(r.target.starts_with("cmd:"), "{r:?}");
        assert!(r.error.contains("requests answered 2xx/3xx"), "{}", r.error);
        assert!(r.ok_responses > 0 && r.ok_responses < 1000, "{r:?}");
    }
    let not_made: Vec<&raw::RawRow> = rows
        .iter()
        .filter(|r| r.error.starts_with("not made: "))
        .collect();
    assert!(
        of(4).iter().all(|r| r.error.starts_with("not made: ")),
        "{rows:#?}"
    );
    assert_eq!(capped.len() + not_made.len(), 6, "{rows:#?}");
    assert!(
        not_made[0].error.contains("hit --max-cell-time (2 s)"),
        "{}",
        not_made[0].error
    );
    // The other target is measured in full, untouched.
    let el: Vec<&raw::RawRow> = rows
        .iter()
        .filter(|r| r.target == "model:event-loop")
        .collect();
    assert_eq!(el.len(), 6);
    assert!(
        el.iter().all(|r| r.error.is_empty() && r.failed == 0),
        "{el:#?}"
    );
    assert!(stdout.contains("model:event-loop"), "{stdout}");
}

#[test]
fn max_cell_time_must_be_positive() {
    let dir = tempfile::tempdir().unwrap();
    let (_, stderr, code) = sweep(
        &["-T", "model:event-loop", "--max-cell-time", "0s"],
        &dir.path().join("res"),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--max-cell-time must be greater than 0"),
        "{stderr}"
    );
}
