//! `loadlab report DIR` against a raw.csv built here: every derived file is
//! written, the summary numbers match an independent computation, a second
//! render is byte-identical, failed runs are listed, bad directories are
//! refused, and the HTML page renders in headless Chromium without a
//! single request leaving it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use loadlab::results::raw::{self, Machine, RawRow};
use serde_json::Value;

mod common;
use common::derived;

fn loadlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(args)
        .output()
        .expect("run loadlab")
}

fn report(dir: &Path) -> Output {
    loadlab(&["report", dir.to_str().expect("utf-8 path")])
}

fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "loadlab report failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---------------------------------------------------------------- data ---

/// Deterministic spread for the made-up measurements, so means and sds
/// are not round numbers and float order matters.
fn jitter(seed: u64) -> f64 {
    let x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((x >> 33) % 1000) as f64 / 1000.0
}

struct Cfg<'a> {
    experiment: &'a str,
    target: &'a str,
    workers: u64,
    cpus: u64,
    path: &'a str,
    keepalive: bool,
    concurrency: u64,
}

fn row(id: u64, c: &Cfg, repeat: u64, warmup: bool, error: &str) -> RawRow {
    let j = jitter(id);
    // Warm-up runs get absurd numbers: if one leaks into a mean, it shows.
    let scale = if warmup { 1000.0 } else { 1.0 };
    let ok = error.is_empty();
    let z = |v: f64| if ok { v } else { 0.0 };
    // Targets and keep-alive differ, so the charts' lines come apart.
    let speed = (1.0 + 0.2 * (c.target.len() % 4) as f64) * if c.keepalive { 1.6 } else { 1.0 };
    let rps = z(scale * speed * (1000.0 + 50.0 * c.concurrency as f64 + 100.0 * j));
    let tpr = z(c.concurrency as f64 * 1000.0 / rps.max(1.0) + j);
    let watched = !c.target.starts_with("url:");
    RawRow {
        run_id: id,
        started_at: 1_700_000_000.0 + id as f64,
        experiment: c.experiment.into(),
        target: c.target.into(),
        workers: c.workers,
        cpus: c.cpus,
        path: c.path.into(),
        concurrency: c.concurrency,
        requests: 1000,
        duration_s: 0.0,
        keepalive: c.keepalive,
        repeat,
        warmup,
        time_taken_s: z(1000.0 / rps.max(1.0)),
        complete: if ok { 1000 } else { 0 },
        failed: if ok { id % 3 } else { 0 },
        non_2xx: if ok { id % 2 } else { 0 },
        timeouts: 0,
        total_bytes: if ok { 700_000 + id } else { 0 },
        html_bytes: if ok { 500_000 } else { 0 },
        requests_per_second: rps,
        time_per_request_ms: tpr,
        time_per_request_all_ms: z(1000.0 / rps.max(1.0)),
        transfer_kbps: z(rps * 0.7),
        connect_min_ms: z(0.01 + j / 100.0),
        connect_mean_ms: z(0.05 + j / 50.0),
        connect_sd_ms: z(0.02),
        connect_median_ms: z(0.04 + j / 50.0),
        connect_max_ms: z(1.0 + j),
        processing_min_ms: z(0.1),
        processing_mean_ms: z(0.2 + j),
        processing_sd_ms: z(0.05),
        processing_median_ms: z(0.2),
        processing_max_ms: z(2.0 + j),
        waiting_min_ms: z(0.09),
        waiting_mean_ms: z(0.19 + j),
        waiting_sd_ms: z(0.04),
        waiting_median_ms: z(0.18),
        waiting_max_ms: z(1.9 + j),
        total_min_ms: z(0.11),
        total_mean_ms: z(0.25 + j),
        total_sd_ms: z(0.06),
        total_median_ms: z(0.24),
        total_max_ms: z(3.0 + j),
        p50_ms: z(tpr * 0.9),
        p66_ms: z(tpr),
        p75_ms: z(tpr * 1.1),
        p80_ms: z(tpr * 1.2),
        p90_ms: z(tpr * 1.5),
        p95_ms: z(tpr * 2.0),
        p98_ms: z(tpr * 2.5),
        p99_ms: z(tpr * 3.0 + j),
        p99_9_ms: z(tpr * 4.0),
        p100_ms: z(tpr * 5.0),
        server_cpu_pct: z(if watched { 40.0 + 60.0 * j } else { 0.0 }),
        server_rss_peak_kb: if ok && watched { 4000 + id * 13 } else { 0 },
        client_cpu_pct: z(30.0 + 10.0 * j),
        ok_responses: if ok { 1000 - id % 2 } else { 0 },
        ok_rps: z(rps * (1000 - id % 2) as f64 / 1000.0),
        server_cpu_ms: z(if watched { 20.0 + 5.0 * j } else { 0.0 }),
        server_ctx_switches: if ok && watched { 100 + id } else { 0 },
        client_thread_max_pct: z(30.0 + 10.0 * j),
        shared_cpu_busy_pct: 0.0,
        client_bound: false,
        cpu_saturated: false,
        error: error.into(),
    }
}

/// A results directory as a sweep leaves it: several experiments, targets,
/// paths, keep-alive on and off, repeats with warm-ups, and failures.
fn results_dir(dir: &Path) -> Vec<RawRow> {
    let mut rows = Vec::new();
    let mut id = 0;
    let mut next = || {
        id += 1;
        id
    };
    // E1: five concurrencies, one warm-up each; model subset: any two servers.
    for target in ["model:event-loop", "model:thread-per-conn"] {
        for (i, c) in [1, 50, 100, 500, 1000].into_iter().enumerate() {
            let cfg = Cfg {
                experiment: "e1",
                target,
                workers: 0,
                cpus: 0,
                path: "/500B.html",
                keepalive: false,
                concurrency: c,
            };
            if i == 0 {
                rows.push(row(next(), &cfg, 1, true, ""));
            }
            rows.push(row(next(), &cfg, 1, false, ""));
        }
    }
    // E3: two paths, two targets, one concurrency.
    for path in ["/500B.html", "/20KB.html"] {
        for target in ["model:reactors", "nginx:workers=4"] {
            let cfg = Cfg {
                experiment: "e3",
                target,
                workers: 4,
                cpus: 0,
                path,
                keepalive: false,
                concurrency: 10000,
            };
            rows.push(row(next(), &cfg, 1, false, ""));
        }
    }
    // E4: pool sizes x cpus, five repeats; one configuration loses repeat 3
    // to an error (no window fits), one has only four repeats (no 3-5).
    for cpus in [1, 2] {
        for workers in [0, 1, 2] {
            let cfg = Cfg {
                experiment: "e4",
                target: "model:thread-pool",
                workers,
                cpus,
                path: "/index.html",
                keepalive: false,
                concurrency: 200,
            };
            rows.push(row(next(), &cfg, 1, true, ""));
            let last = if (cpus, workers) == (1, 1) { 4 } else { 5 };
            for rep in 1..=last {
                let err = if (cpus, workers) == (2, 2) && rep == 3 {
                    "bench: connection refused by 127.0.0.1:40404"
                } else {
                    ""
                };
                rows.push(row(next(), &cfg, rep, false, err));
            }
        }
    }
    // E5: keep-alive off and on, a watched model, an unwatched URL, and a
    // command that never started (every run an error).
    for keepalive in [false, true] {
        for target in [
            "model:event-loop",
            "url:http://127.0.0.1:9/",
            "cmd:'./broken-server --port {port}'",
        ] {
            for c in [1, 4, 8, 12] {
                let cfg = Cfg {
                    experiment: "e5",
                    target,
                    workers: 0,
                    cpus: 0,
                    path: "/500B.html",
                    keepalive,
                    concurrency: c,
                };
                let err = if target.starts_with("cmd:") {
                    "target did not start: port {port} never accepted within 10 s"
                } else {
                    ""
                };
                rows.push(row(next(), &cfg, 1, false, err));
            }
        }
    }
    // nginx left out of E5 (not installed): a row that is not a run, once
    // per invocation of a resumed sweep, so twice here.
    for _ in 0..2 {
        let cfg = Cfg {
            experiment: "e5",
            target: "nginx",
            workers: 2,
            cpus: 0,
            path: "",
            keepalive: false,
            concurrency: 0,
        };
        let mut r = row(
            next(),
            &cfg,
            0,
            false,
            "skipped: nginx is not installed; install it",
        );
        r.requests = 0;
        rows.push(r);
    }
    // Appended in two batches, as a sweep does after each run set.
    let half = rows.len() / 2;
    raw::append(dir, &rows[..half]).expect("append raw rows");
    raw::append(dir, &rows[half..]).expect("append raw rows");
    let machine = Machine {
        cores: 2,
        cpu_model: "Test CPU <&> @ 2.0GHz".into(),
        kernel: "6.1.0-test".into(),
        memory_gib: 3.8,
        loadlab_version: "0.1.0".into(),
        hostname: "testhost".into(),
    };
    std::fs::write(
        dir.join(raw::MACHINE_JSON),
        serde_json::to_string_pretty(&machine).expect("machine json"),
    )
    .expect("write machine.json");
    rows
}

// ------------------------------------------- independent expectations ---

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

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
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

const CHARTS: [&str; 5] = ["rps", "p50", "p99", "cpu-per-request", "rss"];

fn expected_charts() -> Vec<String> {
    let mut v = Vec::new();
    for stem in ["e1", "e3-500B.html", "e3-20KB.html", "e4", "e5"] {
        for m in CHARTS {
            v.push(format!("charts/{stem}-{m}.svg"));
        }
    }
    v.sort();
    v
}

// --------------------------------------------------------------- tests ---

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
    assert_eq!(json["schema"], "loadlab-summary/3");
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

// ------------------------------------------- flags, intervals, ratios ---

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

/// Rows in the body of the HTML table with this id (0 when absent).
fn table_rows(html: &str, id: &str) -> usize {
    let Some(start) = html.find(&format!("<table id=\"{id}\">")) else {
        return 0;
    };
    let rest = &html[start..];
    let end = rest.find("</table>").expect("table closes");
    let body = &rest[..end];
    body.split("<tbody>")
        .nth(1)
        .map_or(0, |b| b.matches("<tr>").count())
}

#[test]
fn rendering_twice_gives_identical_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    results_dir(dir);
    assert_ok(&report(dir));
    let first = derived(dir);
    assert_ok(&report(dir));
    assert_eq!(derived(dir), first, "second render differs");

    // The same raw.csv elsewhere renders to the same bytes: nothing
    // depends on the directory, the clock or the order of a hash map.
    let other = tempfile::tempdir().expect("tempdir");
    for f in ["raw.csv", "machine.json"] {
        std::fs::copy(dir.join(f), other.path().join(f)).expect("copy");
    }
    assert_ok(&report(other.path()));
    assert_eq!(
        derived(other.path()),
        first,
        "render in another directory differs"
    );

    // A stale chart from an earlier layout is cleared, others are kept.
    std::fs::write(dir.join("charts/old-rps.svg"), "<svg/>").expect("write");
    std::fs::write(dir.join("charts/notes.txt"), "mine").expect("write");
    assert_ok(&report(dir));
    assert!(!dir.join("charts/old-rps.svg").exists());
    assert!(dir.join("charts/notes.txt").exists());
}

#[test]
fn report_without_machine_json_or_rows_still_renders() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    // Header only: a sweep interrupted before its first run finished.
    std::fs::write(dir.join("raw.csv"), "").expect("write");
    raw::append(dir, &[]).expect("append nothing");
    assert_ok(&report(dir));
    let html = std::fs::read_to_string(dir.join("index.html")).expect("index.html");
    assert!(html.contains("machine.json was not found"));
    assert!(html.contains("No run failed."));
    let csv = std::fs::read_to_string(dir.join("summary.csv")).expect("summary.csv");
    assert!(csv.starts_with("experiment,target,"), "{csv}");
    assert_eq!(csv.lines().count(), 1);
}

#[test]
fn bad_directories_are_refused_in_one_line_with_status_2() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("nope");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let garbled = tmp.path().join("garbled");
    std::fs::create_dir(&garbled).expect("mkdir");
    std::fs::write(garbled.join("raw.csv"), "run_id,experiment\nx,y\n").expect("write");
    // A header alone that is not loadlab's: no rows to misread, but the
    // report it gave was "0 runs" over a file that holds none of ours.
    let foreign = tmp.path().join("foreign");
    std::fs::create_dir(&foreign).expect("mkdir");
    std::fs::write(foreign.join("raw.csv"), "a,b\n").expect("write");
    let a_file = tmp.path().join("file");
    std::fs::write(&a_file, "x").expect("write");
    for (dir, says) in [
        (&missing, "is not a directory"),
        (&a_file, "is not a directory"),
        (&empty, "has no raw results file raw.csv"),
        (&garbled, "raw.csv"),
        (&foreign, "does not start with loadlab's raw.csv header"),
    ] {
        let out = report(dir);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", dir.display());
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.contains(says), "{err}");
        assert!(!dir.join("index.html").exists());
    }
    let out = loadlab(&["report"]);
    assert_eq!(out.status.code(), Some(2));
}

// ------------------------------------------------------------ chromium ---

/// Headless Chromium on `page` with its net log in `net_log`; returns the
/// DOM with `--dump-dom`.
fn run_chromium(page: &Path, work: &Path, net_log: &Path, extra: &[String]) -> String {
    let mut args = vec![format!("--log-net-log={}", net_log.display())];
    args.extend(extra.iter().cloned());
    common::browser::run(page, work, &args).0
}

/// URLs the page itself asked for over the network, from Chromium's net
/// log. The browser's own background requests (update checks, network
/// time) have no page initiator ("not an origin") and are not the page's
/// doing; requests a file:// page makes carry the opaque initiator "null"
/// and a file:// isolation key. Any non-file URL a page request names is
/// returned.
fn page_requests(net_log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(net_log).expect("net log written");
    // Chromium may leave the final `]}` off when it exits at once.
    let log: Value = serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", text.trim_end().trim_end_matches(','))))
        .expect("net log is JSON");
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .expect("URL_REQUEST_START_JOB in net log constants");
    let mut urls = Vec::new();
    for e in log["events"].as_array().expect("net log events") {
        if e["type"].as_u64() != Some(start_job) {
            continue;
        }
        let p = &e["params"];
        // The job's end event carries only its result, not the URL.
        let Some(url) = p["url"].as_str() else {
            continue;
        };
        let from_browser = p["initiator"] == "not an origin"
            && !p["network_isolation_key"]
                .as_str()
                .unwrap_or_default()
                .contains("file://");
        if !url.starts_with("file:") && !from_browser {
            urls.push(url.to_string());
        }
    }
    urls
}

/// The `<svg>...</svg>` texts of the charts in a DOM dump, with the id of
/// the figure holding each.
fn charts_in(dom: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(i) = rest.find("<figure id=\"") {
        rest = &rest[i + 12..];
        let id = rest[..rest.find('"').expect("id ends")].to_string();
        let end = rest.find("</figure>").expect("figure closes");
        out.push((id, rest[..end].to_string()));
        rest = &rest[end..];
    }
    out
}

/// The point counts of a chart's series lines: the polylines of class
/// `series` (grid and legend samples are other elements).
fn series_lines(svg: &str) -> Vec<usize> {
    svg.split("<polyline")
        .skip(1)
        .filter_map(|el| {
            let el = &el[..el.find('>').unwrap_or(el.len())];
            let points = el.split("points=\"").nth(1)?.split('"').next()?;
            el.contains("class=\"series\"")
                .then(|| points.split_whitespace().count())
        })
        .collect()
}

#[test]
fn html_report_renders_in_headless_chromium_without_network() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-chromium");
    let _ = std::fs::remove_dir_all(&work);
    let dir = work.join("results");
    std::fs::create_dir_all(&dir).expect("mkdir");
    results_dir(&dir);
    assert_ok(&report(&dir));
    let index = dir.join("index.html");

    // The DOM as Chromium parsed it: tables and charts are there.
    let net_log = work.join("net-index.json");
    let dom = run_chromium(&index, &work, &net_log, &["--dump-dom".to_string()]);
    for id in [
        "machine",
        "summary-e1",
        "e1-main",
        "e1-connection-times",
        "e1-percentiles",
        "summary-e3",
        "summary-e4",
        "windows-e4",
        "summary-e5",
        "failed-runs",
        "skipped-targets",
    ] {
        assert!(
            table_rows(&dom, id) > 0,
            "table {id} missing in the rendered DOM"
        );
    }
    assert!(dom.contains("target did not start"), "failed run not shown");
    let charts = charts_in(&dom);
    assert_eq!(
        charts.len(),
        expected_charts().len(),
        "every chart is embedded"
    );
    for (id, svg) in &charts {
        assert!(svg.contains("<svg"), "{id}: no inline svg");
        // Lines join good cells only; the made-up data gives most cells
        // failed or non-2xx requests, so those are hollow markers instead.
        let lines = series_lines(svg);
        let hollow = svg.matches("fill=\"#fff\" stroke=").count();
        assert!(
            lines.iter().all(|n| *n >= 2) && (!lines.is_empty() || hollow > 0),
            "{id}: neither a line nor a hollow marker"
        );
        assert!(
            svg.contains("class=\"marker\""),
            "{id}: no data points drawn"
        );
        assert!(svg.contains("<title>"), "{id}: no tooltips");
        assert!(svg.contains("<text"), "{id}: no title, axis or legend text");
    }
    assert!(
        page_requests(&net_log).is_empty(),
        "the report made network requests: {:?}",
        page_requests(&net_log)
    );

    // The same page without its Content-Security-Policy, so it is the
    // content itself, not the policy, that asks for nothing.
    let html = std::fs::read_to_string(&index).expect("index.html");
    let open = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .expect("CSP meta");
    let close = open + html[open..].find('>').expect("meta ends") + 1;
    let bare = dir.join("index-no-csp.html");
    std::fs::write(&bare, format!("{}{}", &html[..open], &html[close..])).expect("write");
    let bare_log = work.join("net-no-csp.json");
    run_chromium(&bare, &work, &bare_log, &["--dump-dom".to_string()]);
    assert_eq!(page_requests(&bare_log), Vec::<String>::new());

    // The check itself works: a page that does load from the network is
    // caught (its requests go to the refusing proxy, never out).
    let leaky = work.join("leaky.html");
    std::fs::write(
        &leaky,
        "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/x.png\">\
         <img src=\"https://example.invalid/y.png\"></body></html>",
    )
    .expect("write");
    let leaky_log = work.join("net-leaky.json");
    run_chromium(&leaky, &work, &leaky_log, &["--dump-dom".to_string()]);
    let caught = page_requests(&leaky_log);
    assert!(
        caught.iter().any(|u| u.starts_with("http://127.0.0.1:9/"))
            && caught
                .iter()
                .any(|u| u.starts_with("https://example.invalid/")),
        "net log check missed the leaky page's requests: {caught:?}"
    );

    // A screenshot, kept under the target dir for a look.
    common::browser::screenshot(&index, &work, "report.png");
}

#[test]
fn regression_report_panicked_when_stdout_was_closed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    results_dir(tmp.path());
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["report", tmp.path().to_str().unwrap()])
        .stdout(writer)
        .output()
        .expect("run loadlab");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "a closed pipe is not a failure: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(tmp.path().join("index.html").exists());
}
