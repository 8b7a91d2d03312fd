//! Flags, intervals and ratios on a small sweep: a non-2xx cell is flagged in
//! every output, intervals match a hand computation, and the baseline can be
//! chosen.

use std::collections::BTreeMap;
use std::path::Path;

use loadlab::results::raw::{self, RawRow};
use serde_json::Value;

use super::support::{assert_ok, close, loadlab, report};

/// A measured run of a small keep-alive sweep: `rps` answered 2xx/3xx
/// requests per second over a 1 s run of `rps` responses.
fn cell(id: u64, target: &str, c: u64, round: u64, rps: f64) -> RawRow {
    RawRow {
        run_id: id,
        started_at: 1_700_000_000.0 + id as f64,
        experiment: "sweep".into(),
        target: target.into(),
        workers: 1,
        path: "/500B.html".into(),
        concurrency: c,
        duration_s: 1.0,
        keepalive: true,
        repeat: round,
        time_taken_s: 1.0,
        complete: rps as u64,
        ok_responses: rps as u64,
        ok_rps: rps,
        requests_per_second: rps,
        p50_ms: 0.1 * c as f64,
        p99_ms: 0.3 * c as f64,
        server_cpu_pct: 50.0,
        server_rss_peak_kb: 5000,
        server_cpu_ms: 0.02 * rps,
        server_ctx_switches: rps as u64 / 10,
        client_thread_max_pct: 40.0,
        ..RawRow::default()
    }
}

/// Three targets at c=1 and 10, three rounds each. model:iterative at
/// c=10 got only 404s; model:event-loop at c=10 was client-bound in one
/// round and its rounds disagree.
fn flagged_dir(dir: &Path) {
    // model subset: two models beside nginx are enough for a baseline, a
    // flagged cell and a ratio.
    let rps: [(&str, u64, [f64; 3]); 6] = [
        ("nginx", 1, [1000.0, 1100.0, 1200.0]),
        ("nginx", 10, [5000.0, 5100.0, 5200.0]),
        ("model:event-loop", 1, [2000.0, 2300.0, 2400.0]),
        ("model:event-loop", 10, [4000.0, 7000.0, 5000.0]),
        ("model:iterative", 1, [900.0, 950.0, 1000.0]),
        ("model:iterative", 10, [800.0, 850.0, 900.0]),
    ];
    let mut rows = Vec::new();
    for round in 1..=3u64 {
        for (i, (target, c, v)) in rps.iter().enumerate() {
            let mut r = cell(
                rows.len() as u64 + 1,
                target,
                *c,
                round,
                v[round as usize - 1],
            );
            if i == 5 {
                // Every answer a 404: measured, but not throughput.
                r.non_2xx = r.complete;
                r.ok_responses = 0;
                r.ok_rps = 0.0;
            }
            if i == 3 && round == 2 {
                r.client_bound = true;
                r.client_thread_max_pct = 97.0;
            }
            rows.push(r);
        }
    }
    raw::append(dir, &rows).expect("append raw rows");
}

/// summary.csv as one map per line, column name to text.
fn csv_lines(dir: &Path) -> Vec<BTreeMap<String, String>> {
    let mut rdr = csv::Reader::from_path(dir.join("summary.csv")).expect("summary.csv");
    let headers = rdr.headers().expect("header").clone();
    rdr.records()
        .map(|r| {
            let r = r.expect("row");
            headers
                .iter()
                .zip(r.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn line<'a>(
    lines: &'a [BTreeMap<String, String>],
    target: &str,
    c: u64,
) -> &'a BTreeMap<String, String> {
    lines
        .iter()
        .find(|l| l["target"] == target && l["concurrency"] == c.to_string())
        .unwrap_or_else(|| panic!("no line for {target} c={c}"))
}

fn f(l: &BTreeMap<String, String>, col: &str) -> f64 {
    l[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col} is not a number: {l:?}"))
}

#[test]
fn a_non_2xx_cell_is_flagged_in_every_output_and_intervals_match_a_hand_computation() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    flagged_dir(dir);
    assert_ok(&report(dir));
    let lines = csv_lines(dir);

    // The 404 cell: non-2xx, no throughput, in CSV, JSON, Markdown and
    // on the terminal, with a finding that says what it means.
    let bad = line(&lines, "model:iterative", 10);
    assert_eq!(bad["status"], "non-2xx");
    assert_eq!(f(bad, "rps_mean"), 0.0);
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).expect("json"))
            .expect("summary.json");
    let conf = json["configurations"]
        .as_array()
        .expect("configurations")
        .iter()
        .find(|c| c["target"] == "model:iterative" && c["concurrency"] == 10)
        .expect("the 404 cell");
    assert_eq!(conf["status"], "non-2xx");
    assert!(json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .any(|f| f["kind"] == "non-2xx"));
    let md = std::fs::read_to_string(dir.join("summary.md")).expect("summary.md");
    let md_row = md
        .lines()
        .find(|l| l.starts_with("| model:iterative | 10 |"))
        .expect("summary.md row of the 404 cell");
    assert!(md_row.ends_with("| non-2xx |"), "{md_row}");
    let inputs = loadlab::report::load(dir).expect("load");
    let term = loadlab::report::terminal::sweep_table(&inputs);
    let term_row = term
        .lines()
        .find(|l| l.starts_with("| model:iterative ") && l.contains(" c=10 |"))
        .expect("terminal row of the 404 cell");
    assert!(term_row.contains("non-2xx"), "{term_row}");
    assert!(
        term.contains("\nFindings\n") && term.contains("- Non-2xx: 1 cell"),
        "{term}"
    );

    // Status precedence: client-bound in one round outranks noisy, and
    // the noisy flag is still kept.
    let el10 = line(&lines, "model:event-loop", 10);
    assert_eq!(
        (
            el10["status"].as_str(),
            el10["client_bound"].as_str(),
            el10["noisy"].as_str()
        ),
        ("client-bound", "true", "true")
    );
    assert_eq!(f(el10, "client_cpu_pct"), 97.0);
    assert_eq!(line(&lines, "nginx", 1)["status"], "ok");

    // nginx c=1: 1000, 1100, 1200 -> mean 1100, sd 100, t(2) = 4.303.
    let ng = line(&lines, "nginx", 1);
    let half = 4.303 * 100.0 / 3f64.sqrt();
    assert!(close(f(ng, "rps_mean"), 1100.0));
    assert!(close(f(ng, "rps_ci95_low"), 1100.0 - half), "{ng:?}");
    assert!(close(f(ng, "rps_ci95_high"), 1100.0 + half), "{ng:?}");
    assert!(close(f(ng, "rps_cv"), 100.0 / 1100.0));
    // Per request: 0.02 ms of CPU and 0.1 switches per response.
    assert!(close(f(ng, "server_cpu_us_per_req"), 20.0));
    assert!(close(f(ng, "server_ctx_switches_per_req"), 0.1));
    // nginx is the baseline; event-loop c=1 is paired with it by round:
    // 2000/1000, 2300/1100, 2400/1200.
    assert_eq!(ng["baseline"], "nginx");
    let el = line(&lines, "model:event-loop", 1);
    let ratios = [2.0, 2300.0 / 1100.0, 2.0];
    let mean = ratios.iter().sum::<f64>() / 3.0;
    let sd = (ratios.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    let half = 4.303 * sd / 3f64.sqrt();
    assert!(close(f(el, "ratio_to_baseline"), mean));
    assert!(close(f(el, "ratio_ci95_low"), mean - half));
    assert!(close(f(el, "ratio_ci95_high"), mean + half));
    // The tables say it the same way.
    assert!(
        md.contains("| model:event-loop | 1 | 3 | 2233 ± 517 | 2.03 ± 0.13 |"),
        "{md}"
    );
}

#[test]
fn baseline_can_be_chosen_and_an_unknown_one_is_a_usage_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    flagged_dir(dir);
    let d = dir.to_str().expect("utf-8");
    assert_ok(&loadlab(&["report", d, "--baseline", "event-loop"]));
    let lines = csv_lines(dir);
    assert!(lines.iter().all(|l| l["baseline"] == "model:event-loop"));
    let ng = line(&lines, "nginx", 1);
    assert!(f(ng, "ratio_to_baseline") < 0.5, "{ng:?}");
    let md = std::fs::read_to_string(dir.join("summary.md")).expect("summary.md");
    assert!(md.contains("| vs model:event-loop |"));

    let out = loadlab(&["report", d, "--baseline", "apache"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("apache") && err.contains("nginx"), "{err}");
}
