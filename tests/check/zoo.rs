//! The zoo (tests/zoo/): each broken server, in both of its unlike
//! variants and with parameters drawn from a seed, has its one defect
//! found by `loadlab check`, and nothing else fails or warns; the correct
//! servers pass everything. `crossed-responses` is found 20 times in 20.
//! The seed is printed on failure; LOADLAB_ZOO_SEED replays it.

use super::support::{check_json, Checked};
use crate::common::zoo;

/// A server of the zoo, the check it must trip, at what level, and each
/// variant's PARAM range (inclusive).
struct Case {
    file: &'static str,
    id: &'static str,
    level: &'static str,
    a: (u64, u64),
    b: (u64, u64),
}

const fn case(
    file: &'static str,
    id: &'static str,
    level: &'static str,
    a: (u64, u64),
    b: (u64, u64),
) -> Case {
    Case {
        file,
        id,
        level,
        a,
        b,
    }
}

const ANY: (u64, u64) = (0, 9);

fn seed() -> u64 {
    std::env::var("LOADLAB_ZOO_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        })
}

/// A number in `range` from `seed` and `salt` (splitmix64).
fn draw(seed: u64, salt: u64, (lo, hi): (u64, u64)) -> u64 {
    let mut z = seed.wrapping_add(salt.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    lo + (z ^ (z >> 31)) % (hi - lo + 1)
}

fn target(file: &str, variant: &str, param: u64) -> String {
    format!(
        "cmd:python3 {} {{port}} {{root}} {variant} {param}",
        zoo::path(file).display()
    )
}

/// Checks both variants at once; each must trip `id` at `level` and
/// nothing else.
fn holds(c: &Case) {
    let seed = seed();
    let runs: Vec<(String, Checked)> = std::thread::scope(|scope| {
        let spawned: Vec<_> = [("a", c.a, 1), ("b", c.b, 2)]
            .into_iter()
            .map(|(v, range, salt)| {
                let t = target(c.file, v, draw(seed, salt, range));
                // A broken server makes check wait; 60 s leaves none skipped
                // for want of time.
                scope.spawn(move || {
                    let r = check_json(&t, &["--time-limit", "60s"], &[]);
                    (t, r)
                })
            })
            .collect();
        spawned.into_iter().map(|s| s.join().unwrap()).collect()
    });
    for (t, r) in runs {
        let why = format!("seed {seed}, {t}: {}\n{}", r.doc, r.stderr);
        let mut bad: Vec<(String, String)> = r
            .verdicts()
            .into_iter()
            .filter(|(_, v)| v == "fail" || v == "warn")
            .collect();
        bad.sort();
        if c.id.is_empty() {
            assert!(bad.is_empty(), "{why}");
            assert!(r.with("skip").is_empty(), "{why}");
            assert_eq!(r.code, 0, "{why}");
            continue;
        }
        // The shared receive buffer loses a request whenever another
        // connection's bytes land within PARAM ms of it; on a loaded host
        // the robustness probe's good GET after the bad inputs can be that
        // request (seen twice in CI). It is this defect showing through
        // another probe, so it may stand beside it, and nothing else.
        if c.file == "crossed_responses.py" {
            bad.retain(|(id, v)| !(id == "crash-on-bad-input" && v == "fail"));
        }
        assert_eq!(bad, [(c.id.to_string(), c.level.to_string())], "{why}");
        assert!(!r.evidence(c.id).is_empty(), "{why}");
        assert_eq!(r.code, if c.level == "fail" { 3 } else { 0 }, "{why}");
    }
}

macro_rules! zoo_tests {
    ($($name:ident: $case:expr;)*) => {$(
        #[test]
        fn $name() {
            holds(&$case);
        }
    )*};
}

zoo_tests! {
    good_servers_pass_everything: case("good.py", "", "", ANY, ANY);
    bytes_after_body: case("bytes_after_body.py", "bytes-after-body", "fail", (1, 8), (1, 8));
    body_shorter_than_length: case("body_shorter_than_length.py", "body-shorter-than-length", "fail", (1, 64), ANY);
    no_length_no_close: case("no_length_no_close.py", "no-length-no-close", "fail", ANY, (0, 100));
    bad_chunked: case("bad_chunked.py", "bad-chunked", "fail", (1, 50), (1, 50));
    head_with_body: case("head_with_body.py", "head-with-body", "fail", ANY, (1, 64));
    bad_status_line: case("bad_status_line.py", "bad-status-line", "fail", ANY, ANY);
    bad_date: case("bad_date.py", "bad-date", "warn", ANY, (0, 1));
    keepalive_ignored: case("keepalive_ignored.py", "keepalive-ignored", "warn", ANY, (100, 600));
    pipelining_broken: case("pipelining_broken.py", "pipelining-broken", "fail", ANY, ANY);
    http10_not_closed: case("http10_not_closed.py", "http10-not-closed", "fail", ANY, ANY);
    http10_keepalive_unconfirmed: case("http10_keepalive_unconfirmed.py", "http10-keepalive-unconfirmed", "fail", ANY, ANY);
    reset_on_close: case("reset_on_close.py", "reset-on-close", "fail", ANY, ANY);
    expect_continue_ignored: case("expect_continue_ignored.py", "expect-continue-ignored", "warn", ANY, (2000, 4000));
    partial_request_dropped: case("partial_request_dropped.py", "partial-request-dropped", "fail", ANY, ANY);
    crash_on_bad_input: case("crash_on_bad_input.py", "crash-on-bad-input", "fail", (1, 9), ANY);
    bad_input_hangs: case("bad_input_hangs.py", "bad-input-hangs", "fail", ANY, ANY);
    bad_input_accepted: case("bad_input_accepted.py", "bad-input-accepted", "warn", ANY, ANY);
    one_at_a_time: case("one_at_a_time.py", "one-at-a-time", "fail", ANY, ANY);
    crossed_responses: case("crossed_responses.py", "crossed-responses", "fail", (1, 5), (1, 20));
    listen_overflow: case("listen_overflow.py", "listen-overflow", "fail", (0, 2), (0, 2));
    resets: case("resets.py", "resets", "fail", (20, 40), (20, 40));
    busy_when_idle: case("busy_when_idle.py", "busy-when-idle", "fail", ANY, ANY);
    fd_leak: case("fd_leak.py", "fd-leak", "fail", ANY, ANY);
    path_traversal: case("path_traversal.py", "path-traversal", "fail", ANY, ANY);
    slowloris_blocks: case("slowloris_blocks.py", "slowloris-blocks", "fail", ANY, ANY);
}

#[test]
fn crossed_responses_is_found_20_times_in_20() {
    let seed = seed();
    // Five at a time: twenty Python servers at once would load the
    // machine for every other test.
    let found: Vec<String> = (0..4u64)
        .flat_map(|batch| crossed_batch(seed, batch))
        .collect();
    assert_eq!(found.len(), 20);
    let missed: Vec<&String> = found.iter().filter(|f| !f.starts_with("found")).collect();
    assert!(missed.is_empty(), "seed {seed}: missed {missed:?}");
}

/// Five runs of `--only crossed-responses`, the variants alternating.
fn crossed_batch(seed: u64, batch: u64) -> Vec<String> {
    std::thread::scope(|scope| {
        let runs: Vec<_> = (batch * 5..batch * 5 + 5)
            .map(|i| {
                let (v, range) = if i % 2 == 0 {
                    ("a", (1, 5))
                } else {
                    ("b", (1, 20))
                };
                let t = target("crossed_responses.py", v, draw(seed, 10 + i, range));
                scope.spawn(move || {
                    let r = check_json(&t, &["--only", "crossed-responses"], &[]);
                    let found = r.with("fail") == ["crossed-responses"];
                    // A miss says why: the verdict's evidence, or why the
                    // server could not be checked at all.
                    format!(
                        "{} {t}: {} {}",
                        if found { "found" } else { "missed" },
                        r.evidence("crossed-responses"),
                        r.doc["unusable"]
                    )
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    })
}
