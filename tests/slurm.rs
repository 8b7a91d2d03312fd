//! Sharded `loadlab bench` on a real one-node Slurm cluster: `srun -n 4
//! --overcommit` runs four shards (`--shard auto`) against nginx, and what
//! they report merges into exactly what nginx logged. Needs Slurm up
//! (scripts/slurm-up.sh; .ci/run starts it): without it these tests fail
//! naming the script, they never pass by skipping.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::*;
use loadlab::proc::nginx::{Nginx, NginxOptions};
use serde_json::Value;

/// Tasks per srun: more than the node's 2 CPUs, as --overcommit allows.
const SHARDS: u32 = 4;
/// How long an srun may take before the test gives up on it.
const SRUN_LIMIT: Duration = Duration::from_secs(90);
/// Lead time for --start-at: srun starting four tasks on a busy host.
const START_LEAD_MS: u64 = 3000;
/// Bound on the spread of the shards' starts; generous, since the host's
/// two cores are shared with other test processes.
const MAX_SKEW_MS: f64 = 500.0;

/// A Slurm node that takes jobs: idle, or running (or ending) another
/// test's job, since this file's tests run at once on one oversubscribed
/// node. Requiring "idle" failed whenever a sibling's srun was running.
/// A state with a suffix (`*` not responding, `~` powered off) or any
/// other (down, drain) does not count.
fn require_slurm() {
    let up = Command::new("sinfo")
        .args(["-h", "-N", "-o", "%t"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| matches!(l, "idle" | "mix" | "alloc" | "comp"))
        })
        .unwrap_or(false);
    assert!(
        up,
        "no Slurm node taking jobs: start one with scripts/slurm-up.sh (as root; .ci/run does) \
         and stop it with scripts/slurm-down.sh"
    );
}

fn start_nginx(dir: &Path) -> Nginx {
    let root = dir.join("root");
    loadlab::server::handlers::write_embedded_docroot(&root).unwrap();
    let mut opts = NginxOptions::new(&root, loadlab::server::LISTEN_BACKLOG);
    opts.workers = 2;
    opts.access_log = Some(dir.join("access.log"));
    Nginx::start(&opts).expect("start nginx (installed by .ci/run)")
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// `srun -n 4 --overcommit loadlab bench --shard auto ... --out DIR/s-{shard}.json`.
fn srun_shards(dir: &Path, bench: &[&str]) -> Child {
    Command::new("srun")
        .args(["-n", &SHARDS.to_string(), "--overcommit", "--time=2"])
        .args(["--kill-on-bad-exit=0", "--quiet"])
        .arg(loadlab_bin())
        .args(["bench", "-q", "--threads", "1", "--shard", "auto"])
        .args(["--format", "json", "--out"])
        .arg(dir.join("s-{shard}.json"))
        .arg("--per-request")
        .arg(dir.join("r-{shard}.csv"))
        .args(bench)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run srun (scripts/slurm-up.sh installs it)")
}

/// Waits for srun, killing it past SRUN_LIMIT.
fn finish(mut child: Child) -> Output {
    let until = Instant::now() + SRUN_LIMIT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() >= until {
            let _ = child.kill();
            panic!("srun took over {SRUN_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn merge(files: &[PathBuf]) -> Output {
    Command::new(loadlab_bin())
        .args(["merge", "--format", "json"])
        .args(files)
        .output()
        .unwrap()
}

fn shard_files(dir: &Path) -> Vec<PathBuf> {
    (0..SHARDS)
        .map(|i| dir.join(format!("s-{i}.json")))
        .collect()
}

/// nginx's access-log lines, once there are at least `expect` (nginx
/// writes each as its request completes).
fn logged(dir: &Path, expect: usize) -> usize {
    let count = || {
        std::fs::read_to_string(dir.join("access.log"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    wait_until(Duration::from_secs(5), || count() >= expect);
    count()
}

#[test]
fn srun_shards_merge_into_exactly_what_nginx_logged() {
    require_slurm();
    let dir = tempfile::tempdir().unwrap();
    let nginx = start_nginx(dir.path());
    let url = nginx.url("/500B.html");
    let at = (now_ms() + START_LEAD_MS).to_string();
    let out = finish(srun_shards(
        dir.path(),
        &["-n", "4001", "-c", "8", "-k", "--start-at", &at, &url],
    ));
    assert!(
        out.status.success(),
        "srun: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = shard_files(dir.path());
    // Each shard exactly once: one file per index, each naming itself.
    for (i, f) in files.iter().enumerate() {
        let r: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        assert_eq!(r["shard"]["index"], i as u64, "{}", f.display());
        assert_eq!(r["shard"]["count"], SHARDS);
    }
    let out = merge(&files);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged["complete"], 4001);
    assert_eq!(merged["failed"], 0);
    assert_eq!(
        logged(dir.path(), 4001),
        4001,
        "nginx logged exactly the merged count"
    );
    let skew = merged["window"]["start_skew_ms"].as_f64().unwrap();
    assert!(
        skew < MAX_SKEW_MS,
        "the shards' starts were {skew} ms apart"
    );
    // The shards' per-request records, all 4,001 of them, recorded into a
    // histogram like the run's, give the merged histogram value for value.
    let mut h = loadlab::bench::stats::new_histogram();
    for i in 0..SHARDS {
        let text = std::fs::read_to_string(dir.path().join(format!("r-{i}.csv"))).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some(loadlab::bench::records::PER_REQUEST_HEADER)
        );
        for line in lines {
            // response-time, in seconds with µs digits.
            let field = line.split(',').next().unwrap();
            let (sec, frac) = field.split_once('.').unwrap();
            let us = sec.parse::<u64>().unwrap() * 1_000_000 + frac.parse::<u64>().unwrap();
            h.record(us).unwrap();
        }
    }
    assert_eq!(h.len(), 4001, "one record per request");
    let merged_hist =
        loadlab::bench::stats::decode_histogram(merged["histograms"]["total"].as_str().unwrap())
            .unwrap();
    let counts = |h: &hdrhistogram::Histogram<u64>| -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    };
    assert_eq!(counts(&h), counts(&merged_hist));
}

/// The pid of the process Slurm started as shard `index` of a run writing
/// into `dir`, from /proc (its command line names `dir`, its environment
/// SLURM_PROCID).
fn shard_pid(dir: &Path, index: u32) -> Option<i32> {
    let dir = dir.to_string_lossy().into_owned();
    let rank = format!("SLURM_PROCID={index}");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let cmd = String::from_utf8_lossy(&cmd);
        if !cmd.contains("bench") || !cmd.contains(&dir) || cmd.starts_with("srun") {
            return None;
        }
        let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        env.split(|&b| b == 0)
            .any(|v| v == rank.as_bytes())
            .then_some(pid)
    })
}

#[test]
fn a_killed_shard_makes_merge_fail_and_name_it() {
    require_slurm();
    let dir = tempfile::tempdir().unwrap();
    let nginx = start_nginx(dir.path());
    let url = nginx.url("/500B.html");
    let at = (now_ms() + START_LEAD_MS).to_string();
    let srun = srun_shards(
        dir.path(),
        &["-t", "4", "-c", "4", "-k", "--start-at", &at, &url],
    );
    let mut victim = None;
    assert!(
        wait_until(Duration::from_secs(30), || {
            victim = shard_pid(dir.path(), 2);
            victim.is_some()
        }),
        "shard 2 never started"
    );
    assert!(send_signal(victim.unwrap(), libc::SIGKILL));
    let out = finish(srun);
    assert!(!out.status.success(), "srun reports the killed task");
    let files = shard_files(dir.path());
    assert!(!files[2].exists(), "a killed shard writes nothing");
    let present: Vec<PathBuf> = files.into_iter().filter(|f| f.exists()).collect();
    assert_eq!(present.len(), 3, "the other shards finished");
    let out = merge(&present);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("shard 2 of 4 missing"), "{stderr}");
}

/// `sweep --shards 2 --launcher 'srun -n {n} --overcommit'` against a
/// built-in model: the row is the two srun tasks' results merged, as with
/// local shards (tests/lab/shards.rs).
#[test]
fn sweep_over_srun_shards_writes_their_merged_row() {
    require_slurm();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let launcher = "srun -n {n} --overcommit --time=2 --quiet";
    let o = Command::new(loadlab_bin())
        .args([
            "sweep",
            "-q",
            "-T",
            "model:event-loop",
            "--concurrency",
            "4",
        ])
        .args(["--requests", "1001", "--repeat", "1", "--threads", "1"])
        .args(["--shards", "2", "--launcher", launcher, "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    common::shards::check_sharded_row(&out, 2, 1001, Some(launcher));
}
