//! Helpers every report test shares: running `loadlab report`, the raw.csv
//! the tests render (made-up runs with deterministic jitter, warm-ups and
//! failures), the charts to expect, float comparison and HTML table rows.

use std::path::Path;
use std::process::{Command, Output};

use loadlab::catalog::slow::SlowKind;
use loadlab::results::raw::{self, Machine, RawRow};

pub fn loadlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(args)
        .output()
        .expect("run loadlab")
}

pub fn report(dir: &Path) -> Output {
    loadlab(&["report", dir.to_str().expect("utf-8 path")])
}

pub fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "loadlab report failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

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
        slow: SlowKind::None,
        slow_conns: 0,
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
        slow_held_at_end: 0,
        slow_closed_by_server: 0,
        slow_connect_failures: 0,
        error: error.into(),
        ..evidence(c, ok)
    }
}

/// Violations and kernel counters: the URL target's answers all carry
/// bytes after their body, E3's huge concurrency overflows the listen
/// queue, one E1 cell has other traffic beside it; E4 predates the
/// columns (unknown).
fn evidence(c: &Cfg, ok: bool) -> RawRow {
    if !ok || c.experiment == "e4" {
        return RawRow::default();
    }
    let url = c.target.starts_with("url:");
    let flood = c.concurrency == 10000;
    let crowded = c.concurrency == 1000 && c.target == "model:thread-per-conn";
    RawRow {
        violations: Some(if url { 1000 } else { 0 }),
        violation_kinds: url.then(|| "bytes-after-body 1000".into()),
        violation_closes: Some(0),
        connections_opened: Some(1000),
        tcp_listen_overflows: Some(if flood { 12 } else { 0 }),
        tcp_listen_drops: Some(if flood { 12 } else { 0 }),
        tcp_syncookies_sent: Some(0),
        tcp_syn_retrans: Some(if flood { 24 } else { 0 }),
        tcp_retrans_segs: Some(if flood { 24 } else { 0 }),
        tcp_attempt_fails: Some(0),
        tcp_estab_resets: Some(0),
        tcp_out_rsts: Some(0),
        tcp_active_opens: Some(if crowded { 1300 } else { 1000 }),
        ..RawRow::default()
    }
}

/// A results directory as a sweep leaves it: several experiments, targets,
/// paths, keep-alive on and off, repeats with warm-ups, and failures.
pub fn results_dir(dir: &Path) -> Vec<RawRow> {
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

pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

const CHARTS: [&str; 5] = ["rps", "p50", "p99", "cpu-per-request", "rss"];

pub fn expected_charts() -> Vec<String> {
    let mut v = Vec::new();
    for stem in ["e1", "e3-500B.html", "e3-20KB.html", "e4", "e5"] {
        for m in CHARTS {
            v.push(format!("charts/{stem}-{m}.svg"));
        }
    }
    v.sort();
    v
}

/// Rows in the body of the HTML table with this id (0 when absent).
pub fn table_rows(html: &str, id: &str) -> usize {
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
