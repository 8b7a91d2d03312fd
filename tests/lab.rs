//! `loadlab sweep` with small counts against real targets: built-in
//! models, nginx, a foreign server started from a command, and presets.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use loadlab::lab::raw::{self, RawRow};

fn sweep(args: &[&str], out: &Path) -> (String, String, i32) {
    let o = Command::new(loadlab_bin())
        .arg("sweep")
        .args(args)
        .arg("--out")
        .arg(out)
        .arg("-q")
        .output()
        .expect("run loadlab sweep");
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

fn ok_rows(rows: &[RawRow]) {
    for r in rows {
        assert!(
            r.error.is_empty(),
            "run {} against {} failed: {}",
            r.run_id,
            r.target,
            r.error
        );
        assert_eq!(r.failed, 0, "{r:?}");
        assert!(r.complete > 0);
    }
}

#[test]
fn sweep_writes_raw_rows_and_appends_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let args = [
        "-T",
        "model:event-loop",
        "-T",
        "model:thread-pool:workers=2",
        "--concurrency",
        "1,4",
        "--requests",
        "200",
        "--keepalive",
        "on,off",
        "--repeat",
        "2",
        "--warmup-runs",
        "1",
    ];
    let (stdout, stderr, code) = sweep(&args, &out);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Requests per second"), "{stdout}");
    assert!(
        stdout.contains("index.html"),
        "the report location is printed"
    );
    let rows = raw::read(&out).unwrap();
    // 2 targets x 2 keep-alive x 2 concurrency x (1 warm-up + 2 repeats)
    assert_eq!(rows.len(), 24);
    assert_eq!(rows.iter().filter(|r| r.warmup).count(), 8);
    ok_rows(&rows);
    assert!(rows
        .iter()
        .all(|r| r.requests == 200 && (r.complete == 200)));
    assert!(
        rows.iter().all(|r| r.server_rss_peak_kb > 0),
        "server memory sampled in every run"
    );
    // CPU comes in 10 ms clock ticks, so a run of a few ms may show 0.
    assert!(
        rows.iter().any(|r| r.server_cpu_pct > 0.0),
        "server CPU sampled"
    );
    assert!(rows.iter().any(|r| r.client_cpu_pct > 0.0));
    assert!(out.join("machine.json").is_file());

    let before = std::fs::read(out.join("raw.csv")).unwrap();
    let (_, stderr, code) = sweep(&args, &out);
    assert_eq!(code, 0, "{stderr}");
    let after = std::fs::read(out.join("raw.csv")).unwrap();
    assert!(
        after.starts_with(&before),
        "existing rows are never rewritten"
    );
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 48);
    let ids: std::collections::HashSet<u64> = rows.iter().map(|r| r.run_id).collect();
    assert_eq!(ids.len(), 48, "run ids continue across a resumed sweep");
}

#[test]
fn cmd_target_starts_measures_and_stops_a_foreign_server() {
    let dir = tempfile::tempdir().unwrap();
    let docroot = dir.path().join("www");
    std::fs::create_dir_all(&docroot).unwrap();
    std::fs::write(docroot.join("hello.txt"), "hello from python\n").unwrap();
    let out = dir.path().join("res");
    let target = format!(
        "cmd:python3 -m http.server {{port}} --bind 127.0.0.1 --directory {}",
        docroot.display()
    );
    let (_, stderr, code) = sweep(
        &[
            "-T",
            &target,
            "--concurrency",
            "2",
            "--requests",
            "50",
            "--path",
            "/hello.txt",
        ],
        &out,
    );
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 1);
    ok_rows(&rows);
    assert_eq!(rows[0].html_bytes, 50 * 18);
    assert!(
        rows[0].server_rss_peak_kb > 1000,
        "python's RSS was sampled"
    );
    // Stopped afterwards: nothing of it is left listening.
    let ps = Command::new("pgrep")
        .args(["-f", &docroot.display().to_string()])
        .output()
        .unwrap();
    assert!(
        ps.stdout.is_empty(),
        "the cmd target is still running: {}",
        String::from_utf8_lossy(&ps.stdout)
    );
}

#[test]
fn nginx_and_url_targets() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let url = format!("url:{}", server.url(""));
    let (_, stderr, code) = sweep(
        &[
            "-T",
            "nginx:workers=1",
            "-T",
            &url,
            "--concurrency",
            "3",
            "--requests",
            "90",
        ],
        &out,
    );
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 2);
    ok_rows(&rows);
    let nginx = rows.iter().find(|r| r.target == "nginx:workers=1").unwrap();
    assert!(
        nginx.server_rss_peak_kb > 0,
        "nginx's process tree was sampled"
    );
    assert_eq!(
        nginx.html_bytes,
        90 * 500,
        "nginx serves the same 500-byte file"
    );
    let url_row = rows.iter().find(|r| r.target.starts_with("url:")).unwrap();
    assert_eq!(
        url_row.server_rss_peak_kb, 0,
        "no resource figures for a URL target"
    );
}

#[test]
fn e1_quick_preset_runs_with_no_failures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e1");
    let (stdout, stderr, code) = sweep(&["--preset", "e1", "--quick"], &out);
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 6, "2 servers x 3 concurrency levels");
    ok_rows(&rows);
    assert!(rows
        .iter()
        .all(|r| r.non_2xx == 0 && r.experiment == "e1-quick"));
    assert!(stdout.contains("model:event-loop") && stdout.contains("model:thread-per-conn"));
}

#[test]
fn every_preset_parses_and_bad_input_is_rejected() {
    for p in ["e1", "e3", "e4", "e5"] {
        for quick in [false, true] {
            let plan = loadlab::lab::presets::plan(p, quick).unwrap();
            assert!(plan.runs() > 0, "{p}");
        }
    }
    let e4 = loadlab::lab::presets::plan("e4", false).unwrap();
    assert_eq!(e4.repeat, 5);
    assert_eq!(e4.workers.len(), 7);
    let e5 = loadlab::lab::presets::plan("e5", false).unwrap();
    assert_eq!(e5.concurrency, vec![1, 4, 8, 12, 16, 20, 24, 28, 32, 36]);
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--preset", "e9"][..],
        &["-T", "model:nope"][..],
        &["-T", "cmd:python3 -m http.server"][..],
        &["-T", "model:event-loop", "--concurrency", "0"][..],
        &["-T", "model:event-loop", "--keepalive", "maybe"][..],
        &["-T", "model:event-loop", "--cpus", "999"][..],
        &[][..],
    ] {
        let (_, stderr, code) = sweep(args, &dir.path().join("x"));
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    }
}
