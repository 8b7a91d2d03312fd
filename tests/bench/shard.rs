//! Sharded runs (`--shard I/N`, `--start-at`): exact shares, shards run at
//! once merge into the whole load, and merge refuses an incomplete or
//! mixed set of shards; bad specs are one-line usage errors.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::bench::{bench_json, bench_text, u};
use crate::common::*;
use serde_json::Value;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Starts shard `i` of `n` of `args`, writing `dir/s-{shard}.json`.
fn spawn_shard(dir: &Path, i: u32, n: u32, args: &[&str]) -> Child {
    let out = dir.join("s-{shard}.json");
    Command::new(loadlab_bin())
        .args(["bench", "-q", "--format", "json", "--threads", "1"])
        .args(["--shard", &format!("{i}/{n}")])
        .arg("--out")
        .arg(out)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn merge(files: &[PathBuf]) -> (Option<Value>, String, i32) {
    let out = Command::new(loadlab_bin())
        .args(["merge", "--format", "json"])
        .args(files)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (
        serde_json::from_slice(&out.stdout).ok(),
        stderr,
        out.status.code().unwrap_or(-1),
    )
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn three_shards_started_together_merge_into_the_whole_load() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/500B.html");
    // Far enough ahead for three processes to start on a loaded machine.
    let at = (now_ms() + 1500).to_string();
    let args = ["-n", "1000", "-c", "7", "-k", "--start-at", &at, &url];
    let kids: Vec<Child> = (0..3)
        .map(|i| spawn_shard(dir.path(), i, 3, &args))
        .collect();
    for k in kids {
        let out = k.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let files: Vec<PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("s-{i}.json")))
        .collect();
    // Each shard ran its exact share: floor((i+1)X/3) - floor(iX/3).
    let runs: Vec<Value> = files.iter().map(|f| read(f)).collect();
    let shares: Vec<(u64, u64)> = runs
        .iter()
        .map(|r| (u(r, "/run/requests"), u(r, "/run/concurrency")))
        .collect();
    assert_eq!(shares, [(333, 2), (333, 2), (334, 3)]);
    for (i, r) in runs.iter().enumerate() {
        assert_eq!(u(r, "/shard/index"), i as u64);
        assert_eq!(u(r, "/complete"), shares[i].0);
        assert_eq!(r["shard"]["config_hash"], runs[0]["shard"]["config_hash"]);
        let planned = r["window"]["planned_start_unix_ms"].as_f64().unwrap();
        let start = r["window"]["start_unix_ms"].as_f64().unwrap();
        assert_eq!(planned, at.parse::<f64>().unwrap());
        assert!(start >= planned, "shard {i} started before --start-at");
    }
    let (merged, stderr, code) = merge(&files);
    assert_eq!(code, 0, "{stderr}");
    let merged = merged.unwrap();
    assert_eq!(u(&merged, "/complete"), 1000);
    assert_eq!(u(&merged, "/run/concurrency"), 7);
    assert!(stderr.contains("starts were"), "{stderr}");
    let skew = merged["window"]["start_skew_ms"].as_f64().unwrap();
    // Generous: three processes woken by their own timers on a shared host.
    assert!(skew < 250.0, "start skew {skew} ms");

    // A shard lost: merge fails and names it.
    let (_, stderr, code) = merge(&[files[0].clone(), files[2].clone()]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("shard 1 of 3 missing"), "{stderr}");
    // A shard twice (under another name): refused, naming both files.
    let copy = dir.path().join("copy.json");
    std::fs::copy(&files[1], &copy).unwrap();
    let (_, stderr, code) = merge(&[files[0].clone(), files[1].clone(), copy, files[2].clone()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("s-1.json and") && stderr.contains("copy.json are both shard 1"),
        "{stderr}"
    );
    // A shard of another load (another -n): refused as a mixed configuration.
    let other = dir.path().join("other-{shard}.json");
    let (_, err, code) = bench_text(&[
        "-q",
        "-n",
        "999",
        "-c",
        "7",
        "-k",
        "--shard",
        "1/3",
        "--format",
        "json",
        "--out",
        other.to_str().unwrap(),
        &url,
    ]);
    assert_eq!(code, 0, "{err}");
    let other = dir.path().join("other-1.json");
    let (_, stderr, code) = merge(&[files[0].clone(), other, files[2].clone()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("different load configurations"), "{stderr}");
    // A run that is not a shard does not merge with shards.
    let plain = dir.path().join("plain.json");
    let (_, err, code) = bench_text(&[
        "-q",
        "-n",
        "10",
        "--format",
        "json",
        "--out",
        plain.to_str().unwrap(),
        &url,
    ]);
    assert_eq!(code, 0, "{err}");
    let (_, stderr, code) = merge(&[files[0].clone(), plain]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("(not a shard)"), "{stderr}");
}

#[test]
fn open_loop_shards_send_on_their_slots_of_one_schedule() {
    // Two shards of --rate 400 -n 100 run back to back (not together):
    // each sends every other slot, 50 requests at 200/s (about 0.25 s),
    // shard 1 from 2.5 ms after the start.
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    for i in 0..2 {
        let spec = format!("{i}/2");
        let r = bench_json(&[
            "-n",
            "100",
            "-c",
            "4",
            "-k",
            "--threads",
            "1",
            "--rate",
            "400",
            "--shard",
            &spec,
            &url,
        ]);
        assert_eq!(u(&r, "/complete"), 50);
        assert_eq!(r["run"]["rate"], 200.0);
        let t = r["time_taken_s"].as_f64().unwrap();
        // The last slot is 49 * 5 ms (+ 2.5 ms) in; bounded above loosely.
        assert!((0.24..5.0).contains(&t), "shard {i}: {t} s");
    }
}

#[test]
fn a_late_open_loop_start_shows_as_corrected_latency() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    // The planned start is already 400 ms past: the schedule keeps it,
    // so the first requests are that late, and the corrected latency says so.
    let at = (now_ms() - 400).to_string();
    let r = bench_json(&[
        "-n",
        "50",
        "-c",
        "2",
        "-k",
        "--rate",
        "500",
        "--start-at",
        &at,
        &url,
    ]);
    assert_eq!(u(&r, "/complete"), 50);
    let corrected_max = r["corrected_latency_ms"]["max"].as_f64().unwrap();
    assert!(corrected_max >= 350.0, "corrected max {corrected_max} ms");
    let w = &r["window"];
    let late = w["start_unix_ms"].as_f64().unwrap() - w["planned_start_unix_ms"].as_f64().unwrap();
    assert!(
        late >= 350.0,
        "recorded start only {late} ms after the planned one"
    );
}

#[test]
fn start_at_waits_for_the_time_before_the_first_request() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    let t0 = Instant::now();
    let at = now_ms() + 800;
    let r = bench_json(&["-n", "20", "-c", "2", "--start-at", &at.to_string(), &url]);
    assert!(
        t0.elapsed() >= Duration::from_millis(700),
        "{:?}",
        t0.elapsed()
    );
    let start = r["window"]["start_unix_ms"].as_f64().unwrap();
    assert!(start >= at as f64, "first request at {start}, before {at}");
    // RFC 3339 is accepted too (a time just past: the run starts at once).
    let r = bench_json(&["-n", "5", "--start-at", "2020-01-01T00:00:00Z", &url]);
    assert_eq!(u(&r, "/complete"), 5);
}

#[test]
fn bad_shard_and_start_specs_are_one_line_usage_errors() {
    let url = "http://127.0.0.1:9/";
    for (args, why) in [
        (&["--shard", "4/4"][..], "not below the count"),
        (&["--shard", "two"][..], "expected I/N"),
        (&["--shard", "0/0"][..], "count must be 1 to"),
        (
            &["-c", "3", "--shard", "0/4"][..],
            "every shard needs a connection",
        ),
        (&["--out", "r-{shard}.json"][..], "no --shard is given"),
        (&["--start-at", "tomorrow"][..], "RFC 3339"),
    ] {
        let mut all = vec!["-n", "100"];
        all.extend_from_slice(args);
        all.push(url);
        let (out, err, code) = bench_text(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
    // --shard auto outside Slurm or an Indexed Job says what it looks for.
    let out = Command::new(loadlab_bin())
        .args(["bench", "-n", "10", "--shard", "auto", url])
        .env_remove("SLURM_PROCID")
        .env_remove("JOB_COMPLETION_INDEX")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("SLURM_PROCID") && err.contains("JOB_COMPLETION_INDEX"),
        "{err}"
    );
}
