//! Preset e6 (slow clients) in its quick form, restricted to the two
//! event-driven models issue 19 holds to a bound and one blocking model:
//! the slow dimension is recorded, each slow cell stands beside the same
//! client alone, and a denied blocking model is shown, not fatal.

use loadlab::catalog::slow::SlowKind;
use loadlab::results::raw::{self, RawRow};
use serde_json::Value;

use super::support::{serial, summary_json, sweep};

/// Slow connections e6 holds (issue 19's figure).
const MANY: u64 = 2000;
/// The p99 issue 19 holds the two event-driven models below to.
const P99_BOUND_MS: f64 = 10.0;

// model subset: the two event-driven models the issue bounds, and
// iterative, the blocking model slow clients deny most surely.
const BOUNDED: [&str; 2] = ["model:event-loop", "model:reactors"];
const BLOCKING: &str = "model:iterative";

fn conf<'a>(confs: &'a [Value], target: &str, slow: SlowKind) -> &'a Value {
    confs
        .iter()
        .find(|c| c["target"] == target && c["slow"] == slow.name())
        .unwrap_or_else(|| panic!("summary.json has {target} with slow {slow}"))
}

#[test]
fn e6_quick_keeps_event_loop_and_reactors_fast_beside_2000_slow_clients() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e6");
    let mut args = vec!["--preset", "e6", "--quick", "--repeat", "2"];
    for t in BOUNDED.iter().chain([&BLOCKING]) {
        args.extend(["-T", t]);
    }
    let (stdout, stderr, code) = sweep(&args, &out);
    // A blocking model that is denied is a finding, not a failed sweep.
    assert_eq!(code, 0, "{stderr}");

    let rows: Vec<RawRow> = raw::read(&out).unwrap();
    assert_eq!(
        rows.len(),
        3 * 4 * 2,
        "3 targets x 4 slow conditions x 2 rounds"
    );
    for r in &rows {
        assert!(r.error.is_empty(), "{r:?}");
        assert!(r.keepalive && r.concurrency == 1, "{r:?}");
        let want = if r.slow.is_none() { 0 } else { MANY };
        assert_eq!(r.slow_conns, want, "{r:?}");
    }
    for t in BOUNDED.iter().chain([&BLOCKING]) {
        for a in SlowKind::ALL {
            let n = rows
                .iter()
                .filter(|r| r.target == *t && r.slow == a)
                .count();
            assert_eq!(n, 2, "{t} {a}");
        }
    }
    // The slow connections were really held through the bounded cells.
    for r in rows.iter().filter(|r| BOUNDED.contains(&r.target.as_str())) {
        if !r.slow.is_none() {
            assert_eq!(r.slow_held_at_end, MANY, "{} {}", r.target, r.slow);
        }
    }

    let json = summary_json(&out);
    assert_eq!(json["schema"], "loadlab-summary/4");
    let errs = crate::common::schema::validate("summary-v4.schema.json", &json);
    assert!(
        errs.is_empty(),
        "summary.json against its schema: {errs:#?}"
    );
    let confs = json["configurations"].as_array().unwrap();
    assert_eq!(confs.len(), 3 * 4);
    for t in BOUNDED {
        let alone = conf(confs, t, SlowKind::None);
        assert_eq!(alone["failed"], 0, "{t} alone");
        assert!(alone["no_slow_p99_ms"].is_null());
        let alone_p99 = alone["p99_ms_mean"].as_f64().unwrap();
        // A host too busy for 10 ms alone: the bound is its own p99 plus
        // 10 ms, so the test measures the slow clients, not the host.
        let bound = P99_BOUND_MS.max(alone_p99 + P99_BOUND_MS);
        for a in [SlowKind::Header, SlowKind::Body, SlowKind::Read] {
            let c = conf(confs, t, a);
            assert_eq!(c["failed"], 0, "{t} {a}: {c}");
            assert!(c["ok_responses"].as_u64().unwrap() > 100, "{t} {a}: {c}");
            let p99 = c["p99_ms_mean"].as_f64().unwrap();
            assert!(p99 < bound, "{t} {a}: p99 {p99} ms, bound {bound} ms");
            // Paired with the none row of the same target.
            assert_eq!(c["no_slow_p99_ms"].as_f64(), Some(alone_p99), "{t} {a}");
            assert_eq!(c["no_slow_failed"], 0, "{t} {a}");
        }
    }
    // The blocking model's cells are there, whatever they met.
    for a in [SlowKind::Header, SlowKind::Body, SlowKind::Read] {
        let c = conf(confs, BLOCKING, a);
        assert!(c["no_slow_p99_ms"].is_number(), "{a}: {c}");
    }
    let findings = json["findings"].as_array().unwrap();
    let slow: Vec<&str> = findings
        .iter()
        .filter(|f| f["kind"] == "slow-clients")
        .map(|f| f["text"].as_str().unwrap())
        .collect();
    assert_eq!(slow.len(), 3, "one finding per target: {findings:?}");
    assert!(slow.iter().any(|f| f.starts_with(BLOCKING)), "{slow:?}");

    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<table id=\"slow-e6-quick\">"));
    assert!(
        stdout.contains("header x2000") && stdout.contains("p99 ms"),
        "{stdout}"
    );
}
