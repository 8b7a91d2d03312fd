//! Every derived file is written and its numbers match an independent
//! computation (means, intervals, row status) done here.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::derived;
use loadlab::results::raw::RawRow;
use serde_json::Value;

use super::support::{assert_ok, close, expected_charts, report, results_dir, table_rows};

#[derive(Debug)]
struct Expect {
    runs: usize,
    rps: (f64, f64),
    tpr: (f64, f64),
    tpr_all: (f64, f64),
    p50: (f64, f64),
    p99: (f64, f64),
    cpu: (f64, f64),
    rss: (f64, f64),
    client_cpu: (f64, f64),
    failed: u64,
    non_2xx: u64,
    windows: [Option<f64>; 3],
    /// Answered requests/s: mean and the 95 % interval's ends (Student's
    /// t, df = runs - 1), CV; `None` ends and CV with one run.
    ok_rps: f64,
    ok_rps_ci: Option<(f64, f64)>,
    ok_rps_cv: Option<f64>,
    status: &'static str,
}

/// Student's t, two-sided 95 %, for the degrees of freedom the data has.
fn t95(df: usize) -> f64 {
    [12.706, 4.303, 3.182, 2.776][df - 1]
}

/// Status by the documented precedence, from the runs' own fields.
fn status_of(rs: &[&RawRow], error_runs: usize, cv: Option<f64>) -> &'static str {
    let failed: u64 = rs.iter().map(|r| r.failed).sum();
    let non: u64 = rs.iter().map(|r| r.non_2xx).sum();
    let ok: u64 = rs.iter().map(|r| r.ok_responses).sum();
    if failed > 0 || error_runs > 0 || (ok == 0 && non == 0) {
        "failed"
    } else if non > 0 {
        "non-2xx"
    } else if rs.iter().any(|r| r.client_bound) {
        "client-bound"
    } else if rs.iter().any(|r| r.cpu_saturated) {
        "cpu-saturated"
    } else if cv.is_some_and(|cv| cv > 0.10) {
        "noisy"
    } else {
        "ok"
    }
}

/// Mean and sample sd (n - 1), written out longhand.
fn msd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mut sum = 0.0;
    for x in v {
        sum += x;
    }
    let mean = sum / n;
    if v.len() == 1 {
        return (mean, 0.0);
    }
    let mut ss = 0.0;
    for x in v {
        ss += (x - mean).powi(2);
    }
    (mean, (ss / (n - 1.0)).sqrt())
}

type Key = (String, String, u64, u64, String, bool, u64);

fn key_of(r: &RawRow) -> Key {
    (
        r.experiment.clone(),
        r.target.clone(),
        r.workers,
        r.cpus,
        r.path.clone(),
        r.keepalive,
        r.concurrency,
    )
}

fn expectations(rows: &[RawRow]) -> BTreeMap<Key, Expect> {
    let mut errors: BTreeMap<Key, usize> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.is_failed()) {
        *errors.entry(key_of(r)).or_default() += 1;
    }
    let mut by: BTreeMap<Key, Vec<&RawRow>> = BTreeMap::new();
    for r in rows.iter().filter(|r| !r.warmup && r.error.is_empty()) {
        by.entry(key_of(r)).or_default().push(r);
    }
    by.into_iter()
        .map(|(k, rs)| {
            let f = |g: fn(&RawRow) -> f64| msd(&rs.iter().map(|r| g(r)).collect::<Vec<_>>());
            let tpr_of = |rep: u64| {
                rs.iter()
                    .find(|r| r.repeat == rep)
                    .map(|r| r.time_per_request_ms)
            };
            let win = |a: u64| {
                let v: Option<Vec<f64>> = (a..a + 3).map(tpr_of).collect();
                v.map(|v| (v[0] + v[1] + v[2]) / 3.0)
            };
            let (rps_m, rps_sd) = f(|r| r.ok_rps);
            let n = rs.len();
            let ci = (n > 1).then(|| {
                let half = t95(n - 1) * rps_sd / (n as f64).sqrt();
                (rps_m - half, rps_m + half)
            });
            let cv = (n > 1).then(|| rps_sd / rps_m);
            let status = status_of(&rs, errors.get(&k).copied().unwrap_or(0), cv);
            let e = Expect {
                ok_rps: rps_m,
                ok_rps_ci: ci,
                ok_rps_cv: cv,
                status,
                runs: rs.len(),
                rps: f(|r| r.requests_per_second),
                tpr: f(|r| r.time_per_request_ms),
                tpr_all: f(|r| r.time_per_request_all_ms),
                p50: f(|r| r.p50_ms),
                p99: f(|r| r.p99_ms),
                cpu: f(|r| r.server_cpu_pct),
                rss: f(|r| r.server_rss_peak_kb as f64),
                client_cpu: f(|r| r.client_cpu_pct),
                failed: rs.iter().map(|r| r.failed).sum(),
                non_2xx: rs.iter().map(|r| r.non_2xx).sum(),
                windows: [win(1), win(2), win(3)],
            };
            (k, e)
        })
        .collect()
}

fn num(v: &Value, field: &str) -> f64 {
    v[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} is not a number in {v}"))
}

fn check_pair(v: &Value, field: &str, want: (f64, f64)) {
    let (m, s) = (
        num(v, &format!("{field}_mean")),
        num(v, &format!("{field}_sd")),
    );
    assert!(
        close(m, want.0) && close(s, want.1),
        "{field}: got {m} ± {s}, want {} ± {} in {v}",
        want.0,
        want.1
    );
}

#[test]
fn report_writes_every_file_with_the_right_numbers() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let rows = results_dir(dir);
    let raw_before = std::fs::read(dir.join("raw.csv")).expect("raw.csv");

    let out = report(dir);
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("index.html"));
    assert_eq!(
        std::fs::read(dir.join("raw.csv")).expect("raw.csv"),
        raw_before,
        "report must never touch raw.csv"
    );

    let files = derived(dir);
    let charts: Vec<String> = files
        .keys()
        .filter(|p| p.starts_with("charts"))
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(charts, expected_charts());

    // summary.json against the independent computation.
    let json: Value = serde_json::from_slice(&files[Path::new("summary.json")]).expect("json");
    assert_eq!(json["schema"], "loadlab-summary/4");
    assert_eq!(json["machine"]["hostname"], "testhost");
    let configs = json["configurations"].as_array().expect("configurations");
    let want = expectations(&rows);
    assert_eq!(
        configs.len(),
        want.len(),
        "one summary row per configuration"
    );
    for c in configs {
        let key: Key = (
            c["experiment"].as_str().expect("experiment").into(),
            c["target"].as_str().expect("target").into(),
            c["workers"].as_u64().expect("workers"),
            c["cpus"].as_u64().expect("cpus"),
            c["path"].as_str().expect("path").into(),
            c["keepalive"].as_bool().expect("keepalive"),
            c["concurrency"].as_u64().expect("concurrency"),
        );
        let e = want
            .get(&key)
            .unwrap_or_else(|| panic!("unexpected configuration {key:?}"));
        assert_eq!(c["runs"].as_u64(), Some(e.runs as u64), "{key:?}");
        check_pair(c, "requests_per_second", e.rps);
        check_pair(c, "time_per_request_ms", e.tpr);
        check_pair(c, "time_per_request_all_ms", e.tpr_all);
        check_pair(c, "p50_ms", e.p50);
        check_pair(c, "p99_ms", e.p99);
        check_pair(c, "server_cpu_pct", e.cpu);
        check_pair(c, "server_rss_peak_kb", e.rss);
        check_pair(c, "client_cpu_pct", e.client_cpu);
        assert!(close(num(c, "rps_mean"), e.ok_rps), "{key:?} rps_mean: {c}");
        match e.ok_rps_ci {
            None => assert!(c["rps_ci95_low"].is_null() && c["rps_ci95_high"].is_null()),
            Some((lo, hi)) => assert!(
                close(num(c, "rps_ci95_low"), lo) && close(num(c, "rps_ci95_high"), hi),
                "{key:?} interval: {c}"
            ),
        }
        match e.ok_rps_cv {
            None => assert!(c["rps_cv"].is_null(), "{key:?}"),
            Some(cv) => assert!(close(num(c, "rps_cv"), cv), "{key:?}"),
        }
        assert_eq!(c["status"], e.status, "{key:?}");
        assert_eq!(c["failed"].as_u64(), Some(e.failed), "{key:?}");
        assert_eq!(c["non_2xx"].as_u64(), Some(e.non_2xx), "{key:?}");
        for (field, w) in ["window_1_3_ms", "window_2_4_ms", "window_3_5_ms"]
            .iter()
            .zip(e.windows)
        {
            match w {
                None => assert!(c[field].is_null(), "{key:?} {field} should be absent: {c}"),
                Some(w) => assert!(close(num(c, field), w), "{key:?} {field}: {c}"),
            }
        }
    }
    // The E4 configurations the data was built to test.
    let e4 = |workers: u64, cpus: u64| {
        configs
            .iter()
            .find(|c| c["experiment"] == "e4" && c["workers"] == workers && c["cpus"] == cpus)
            .expect("e4 configuration")
    };
    assert!(e4(0, 1)["window_3_5_ms"].is_number());
    assert!(e4(1, 1)["window_2_4_ms"].is_number() && e4(1, 1)["window_3_5_ms"].is_null());
    assert!(e4(2, 2)["window_1_3_ms"].is_null(), "repeat 3 failed");
    assert_eq!(e4(2, 2)["runs"], 4);
    assert_eq!(e4(2, 2)["error_runs"], 1);
    assert_eq!(e4(0, 1)["warmup_runs"], 1);
    // The command that never started has no summary row, only failures.
    assert!(!configs
        .iter()
        .any(|c| c["target"].as_str().is_some_and(|t| t.starts_with("cmd:"))));

    // Failed runs: every error row, listed in summary.json, .md and .html.
    let failed = json["failed_runs"].as_array().expect("failed_runs");
    let error_rows: Vec<&RawRow> = rows
        .iter()
        .filter(|r| !r.error.is_empty() && !r.is_skip())
        .collect();
    assert_eq!(failed.len(), error_rows.len());
    for (f, r) in failed.iter().zip(&error_rows) {
        assert_eq!(f["run_id"].as_u64(), Some(r.run_id));
        assert_eq!(f["error"].as_str(), Some(r.error.as_str()));
    }
    let md = String::from_utf8_lossy(&files[Path::new("summary.md")]).to_string();
    let html = String::from_utf8_lossy(&files[Path::new("index.html")]).to_string();
    // The skipped target is listed once, apart from failed runs.
    let skipped = json["skipped_targets"].as_array().expect("skipped_targets");
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0]["target"], "nginx");
    assert!(!failed.iter().any(|f| f["target"] == "nginx"));
    assert!(!configs.iter().any(|c| c["target"] == "nginx"));
    assert_eq!(table_rows(&html, "skipped-targets"), 1);
    assert!(md.contains("## Skipped targets"));
    for text in [&md, &html] {
        assert!(text.contains("nginx is not installed; install it"));
        assert!(text.contains("Failed runs"));
        assert!(text.contains("bench: connection refused by 127.0.0.1:40404"));
        assert!(text.contains("target did not start"));
    }

    // summary.csv holds the same rows as summary.json.
    let mut rdr = csv::Reader::from_reader(&files[Path::new("summary.csv")][..]);
    let headers = rdr.headers().expect("csv header").clone();
    let csv_rows: Vec<csv::StringRecord> = rdr.records().map(|r| r.expect("csv row")).collect();
    assert_eq!(csv_rows.len(), configs.len());
    let col = |name: &str| headers.iter().position(|h| h == name).expect(name);
    for (r, c) in csv_rows.iter().zip(configs) {
        assert_eq!(&r[col("target")], c["target"].as_str().expect("target"));
        let rps: f64 = r[col("requests_per_second_mean")].parse().expect("rps");
        assert!(close(rps, num(c, "requests_per_second_mean")));
        let w = &r[col("window_3_5_ms")];
        assert_eq!(w.is_empty(), c["window_3_5_ms"].is_null());
        assert_eq!(&r[col("status")], c["status"].as_str().expect("status"));
        let lo = &r[col("rps_ci95_low")];
        match c["rps_ci95_low"].as_f64() {
            None => assert!(lo.is_empty(), "one run: empty, not ±inf"),
            Some(v) => assert!(close(lo.parse().expect("number"), v)),
        }
    }

    // E1's ab-style tables: one row per (server, concurrency), and ab's
    // connection-times block of four phases per row.
    assert_eq!(table_rows(&html, "e1-main"), 10);
    assert_eq!(table_rows(&html, "e1-connection-times"), 40);
    assert_eq!(table_rows(&html, "e1-percentiles"), 10);
    for id in [
        "machine",
        "summary-e1",
        "summary-e3",
        "summary-e4",
        "summary-e5",
        "windows-e4",
        "failed-runs",
    ] {
        assert!(table_rows(&html, id) > 0, "table {id} missing or empty");
    }
    assert!(md.contains("### e1: ab report per server and concurrency"));
    assert!(
        md.contains("| model:thread-per-conn | 1000 |"),
        "E1 row in summary.md"
    );
    // The machine's text is escaped, not markup.
    assert!(html.contains("Test CPU &lt;&amp;&gt; @ 2.0GHz"));
    // Nothing in the page can fetch anything.
    for bad in [
        "<script",
        "<link",
        "<img",
        "<iframe",
        "src=",
        "url(",
        "@import",
        "href=\"http",
    ] {
        assert!(!html.contains(bad), "index.html contains {bad}");
    }
}
