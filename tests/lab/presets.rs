//! The presets E1-E5 in their quick form (E6 is in slow.rs), parsing
//! every preset, and `loadlab` with no arguments.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use loadlab::catalog::presets::{Preset, PresetKind};
use loadlab::results::raw::{self, RawRow};

use super::support::{charts_of, check_derived, ok_rows, serial, summary_json, sweep, sweep_json};

#[test]
fn e1_quick_preset_runs_with_no_failures() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e1");
    let (stdout, stderr, code) = sweep(&["--preset", "e1", "--quick"], &out);
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    let models = loadlab::catalog::models::Model::ALL;
    assert_eq!(
        rows.len(),
        models.len() * 3 * 3,
        "every model x 3 concurrency levels x 3 rounds"
    );
    ok_rows(&rows);
    assert!(rows
        .iter()
        .all(|r| r.non_2xx == 0 && r.experiment == "e1-quick"));
    for m in models {
        let target = format!("model:{}", m.name());
        assert!(stdout.contains(&target), "{target} missing from {stdout}");
        assert!(
            rows.iter().filter(|r| r.target == target).count() == 9,
            "{target}: 3 concurrency levels x 3 rounds"
        );
    }
}

#[test]
fn e3_quick_preset_runs_against_ten_thousand_style_concurrency() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e3");
    let t = Instant::now();
    // One round: the preset's three are held by its plan's unit test.
    let (stdout, stderr, code) = sweep(&["--preset", "e3", "--quick", "--repeat", "1"], &out);
    assert_eq!(code, 0, "{stderr}");
    println!("e3 --quick took {:?}", t.elapsed());
    let rows = raw::read(&out).unwrap();
    let measured: Vec<RawRow> = rows
        .iter()
        .filter(|r| !r.is_skip() && !r.warmup)
        .cloned()
        .collect();
    require_nginx();
    let targets = 3;
    // Each target warmed up once per path before its measured run, and
    // answered it whole.
    let warmups: Vec<RawRow> = rows
        .iter()
        .filter(|r| r.warmup && !r.is_skip())
        .cloned()
        .collect();
    assert_eq!(
        warmups.len(),
        2 * targets,
        "one warm-up per target and path"
    );
    ok_rows(&warmups);
    assert_eq!(measured.len(), 2 * targets, "2 paths x {targets} targets");
    ok_rows(&measured);
    for r in &measured {
        assert_eq!(r.concurrency, 2000);
        assert_eq!(r.complete, 2000);
        assert!(r.server_cpu_pct > 0.0 && r.server_rss_peak_kb > 0, "{r:?}");
    }
    assert!(stdout.contains("/20KB.html") && stdout.contains("/500B.html"));
    let mut charts = charts_of("e3-quick-500B.html");
    charts.extend(charts_of("e3-quick-20KB.html"));
    check_derived(&out, 2 * targets, &charts);
}

#[test]
fn e4_quick_preset_has_a_line_per_pool_size_and_cpu_count() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e4");
    let t = Instant::now();
    let (stdout, stderr, code) = sweep(&["--preset", "e4", "--quick"], &out);
    assert_eq!(code, 0, "{stderr}");
    println!("e4 --quick took {:?}", t.elapsed());
    let cpus = [1, 2, 4]
        .iter()
        .filter(|&&c| c <= loadlab::proc::affinity::allowed_cpus().len())
        .count();
    let rows = raw::read(&out).unwrap();
    assert_eq!(
        rows.len(),
        4 * cpus * 5,
        "4 pool sizes x {cpus} cpu counts x 5 repeats"
    );
    ok_rows(&rows);
    // Regression: the terminal table had one line for all of E4.
    let lines = stdout
        .lines()
        .filter(|l| l.starts_with("| model:thread-pool"))
        .count();
    assert_eq!(lines, 4 * cpus, "{stdout}");
    if cpus > 1 {
        assert!(stdout.contains("| workers | cpus |"), "{stdout}");
    }
    let json = summary_json(&out);
    let confs = json["configurations"].as_array().unwrap();
    assert_eq!(confs.len(), 4 * cpus);
    for c in confs {
        assert_eq!(c["runs"], 5);
        for w in ["window_1_3_ms", "window_2_4_ms", "window_3_5_ms"] {
            assert!(c[w].as_f64().is_some_and(|v| v > 0.0), "{w} in {c}");
        }
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<table id=\"windows-e4-quick\">"));
    check_derived(&out, 4 * cpus, &charts_of("e4-quick"));
}

#[test]
fn e5_quick_preset_runs_every_model_and_go_with_and_without_keepalive() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e5");
    let t = Instant::now();
    // Without the counting passes (80 cells): what is counted is
    // tests/accounting.rs's, and E5's shape does not depend on it.
    let (stdout, stderr, code) = sweep(
        &[
            "--preset",
            "e5",
            "--quick",
            "--repeat",
            "1",
            "--no-accounting",
        ],
        &out,
    );
    assert_eq!(code, 0, "{stderr}");
    println!("e5 --quick took {:?}", t.elapsed());
    let rows = raw::read(&out).unwrap();
    // Go net/http beside the models (.ci/run installs go).
    let targets = MODELS.len() + 1;
    assert_eq!(
        rows.len(),
        targets * 4 * 2,
        "every model and go x 4 concurrency levels x keep-alive on/off"
    );
    ok_rows(&rows);
    assert!(
        rows.iter().all(|r| r.client_cpu_pct > 0.0),
        "client CPU in every run"
    );
    for t in MODELS
        .iter()
        .map(|m| format!("model:{m}"))
        .chain(["go".into()])
    {
        assert_eq!(rows.iter().filter(|r| r.target == t).count(), 8, "{t}");
        assert!(stdout.contains(&format!("| {t} ")), "{stdout}");
    }
    check_derived(&out, targets * 8, &charts_of("e5-quick"));
}

#[test]
fn e2_preset_writes_to_the_sweep_out_dir() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e2");
    let (_, stderr, code) = sweep(&["--preset", "e2", "--quick"], &out);
    assert_eq!(code, 0, "{stderr}");
    for f in ["stress.csv", "stress.json", "stress.md"] {
        assert!(out.join(f).is_file(), "{f} in --out");
    }
}

/// `loadlab` with no arguments, in a fresh directory: the short comparison
/// of every model (about a minute), a table on stdout, the report in
/// ./loadlab-report/, and a report from an earlier invocation moved aside
/// rather than averaged in.
#[test]
fn loadlab_with_no_arguments_writes_a_fresh_report() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("loadlab-report");
    std::fs::create_dir(&old).unwrap();
    let stale = RawRow {
        run_id: 1,
        experiment: "default".into(),
        target: "model:event-loop".into(),
        path: "/500B.html".into(),
        concurrency: 1,
        duration_s: 0.6,
        repeat: 1,
        complete: 1,
        requests_per_second: 1.0,
        ..RawRow::default()
    };
    raw::append(&old, &[stale]).unwrap();
    let old_raw = std::fs::read(old.join("raw.csv")).unwrap();

    let t = Instant::now();
    let o = Command::new(loadlab_bin())
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("run loadlab");
    let took = t.elapsed();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    println!("loadlab with no arguments took {took:?}");
    assert!(took < Duration::from_secs(240), "took {took:?}");
    assert!(
        stdout.contains("previous report is now in loadlab-report.previous/"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("loadlab-report.previous/raw.csv")).unwrap(),
        old_raw
    );
    assert!(
        stdout.contains("Capacity: ") && stdout.contains("Requests per second"),
        "{stdout}"
    );
    for m in MODELS {
        assert!(
            stdout.matches(&format!("| model:{m} ")).count() >= 3,
            "{m} in the capacity table and twice (keep-alive on, off) in the cells': {stdout}"
        );
    }
    assert!(
        stdout.contains(" p99 ms |"),
        "latency at the common rate: {stdout}"
    );
    assert!(
        stdout.contains("Report: loadlab-report/index.html"),
        "{stdout}"
    );
    let report = dir.path().join("loadlab-report");
    assert!(report.join("index.html").is_file());
    let rows = raw::read(&report).unwrap();
    require_nginx();
    let targets = loadlab::catalog::models::Model::ALL.len() + 1;
    let measured: Vec<RawRow> = rows.iter().filter(|r| !r.is_skip()).cloned().collect();
    assert_eq!(
        measured.len(),
        targets * 2 * 3,
        "targets x keep-alive x 3 rounds"
    );
    assert!(measured
        .iter()
        .all(|r| r.duration_s == 0.5 && r.concurrency == 50));
    // One common rate for every cell: the capacity search's.
    let cap: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("capacity.json")).unwrap())
            .unwrap();
    assert_eq!(cap["results"].as_array().unwrap().len(), targets, "{cap:#}");
    let common = cap["common_rate"].as_f64().expect("a common rate");
    assert!(
        measured.iter().all(|r| r.rate == Some(common)),
        "every cell offered {common}/s"
    );
    let md = std::fs::read_to_string(report.join("summary.md")).unwrap();
    let findings = &md[md.find("## Findings").unwrap()..md.find("## Capacity").unwrap()];
    // Measured capacities, or all bounds on a host the tests beside it
    // keep busy (seen in CI): either way the capacity finding comes first.
    let first = "## Findings\n\n- At keep-alive on, c=50: ";
    assert!(
        findings.starts_with(&format!("{first}capacity within p99 < 10 ms"))
            || findings.starts_with(&format!("{first}bounds, not ranked")),
        "the report opens with the capacity ranking: {findings}"
    );
    assert!(
        findings.contains("server CPU per request (µs), cheapest first"),
        "{findings}"
    );
    // The charts that answer: capacity as bars, cost at the common rate.
    for chart in ["capacity-p99.svg", "capacity.svg", "cpu-at-rate.svg"] {
        assert!(md.contains(&format!("(charts/{chart})")), "{chart}: {md}");
        assert!(report.join("charts").join(chart).is_file(), "{chart}");
    }
    let info = sweep_json(&report);
    assert_eq!(
        (info["command"].as_str(), info["min_time_s"].as_f64()),
        (Some("loadlab"), Some(0.5))
    );
    ok_rows(&measured);
    assert!(
        rows.iter().all(|r| r.started_at > 0.0),
        "the earlier invocation's row is not in this report"
    );
}

#[test]
fn every_preset_parses_and_bad_input_is_rejected() {
    let _serial = serial();
    for p in Preset::ALL
        .into_iter()
        .filter(|p| p.kind() == PresetKind::Sweep)
    {
        for quick in [false, true] {
            let plan = p.sweep_plan(quick).unwrap();
            assert!(plan.runs() > 0, "{p}");
        }
    }
    let e4 = Preset::E4.sweep_plan(false).unwrap();
    assert_eq!(e4.repeat, 5);
    assert_eq!(e4.workers.len(), 7);
    let e5 = Preset::E5.sweep_plan(false).unwrap();
    assert_eq!(e5.concurrency, vec![1, 4, 8, 12, 16, 20, 24, 28, 32, 36]);
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--preset", "e9"][..],
        &["-T", "model:nope"][..],
        &["-T", "cmd:python3 -m http.server"][..],
        &["-T", "model:event-loop", "--concurrency", "0"][..],
        &["-T", "model:event-loop", "--keepalive", "maybe"][..],
        &["-T", "model:event-loop", "--cpus", "999"][..],
        &["-T", "model:event-loop", "--cpus", "half"][..],
        &["-T", "model:event-loop", "--client-cpus", "999"][..],
        &["-T", "model:event-loop", "--client-cpus", "0"][..],
        // The target may use every CPU: a pinned client would share one.
        &[
            "-T",
            "model:event-loop",
            "--cpus",
            "all",
            "--client-cpus",
            "1",
        ][..],
        &["-T", "model:event-loop", "--timeout", "0"][..],
        &["-T", "model:event-loop", "--quick"][..],
        &["-T", "model:event-loop", "--baseline", "nginx"][..],
        &["-T", "model:event-loop", "--min-time", "soon"][..],
        &["-T", "model:event-loop", "--slow", "slowloris"][..],
        &[
            "-T",
            "model:event-loop",
            "--slow",
            "header",
            "--slow-conns",
            "0",
        ][..],
        &["-T", "model:event-loop", "--slow-conns", "5"][..],
        &["--preset", "e2", "-T", "model:event-loop"][..],
        &["--preset", "e2", "--concurrency", "5", "--repeat", "2"][..],
        &[][..],
    ] {
        let (_, stderr, code) = sweep(args, &dir.path().join("x"));
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(!dir.path().join("x").exists(), "{args:?} wrote results");
    }
}

/// `--client-cpus` that would share a CPU with the target is refused,
/// naming both counts; one that fits is taken.
#[test]
fn client_cpus_never_overlap_the_target_s() {
    let n = loadlab::proc::affinity::allowed_cpus().len();
    let dir = tempfile::tempdir().unwrap();
    let over = n.to_string();
    let (_, stderr, code) = sweep(
        &[
            "-T",
            "model:event-loop",
            "--cpus",
            "1",
            "--client-cpus",
            &over,
        ],
        &dir.path().join("x"),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "--client-cpus {n} overlaps the target's CPUs (--cpus 1)"
        )),
        "{stderr}"
    );
    assert!(!dir.path().join("x").exists());
}
