//! Runs where something fails: a client that cannot be served in time, a
//! server that does not start, a killed stress, and a dead prefork master.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

use super::support::{
    assert_counts_agree, assert_table_columns, csv_rows, json_file, leftovers, num, stress,
};

/// A one-worker server whose worker is held by an upload that never ends:
/// stress clients queue behind it and must give up at --timeout.
fn timeout_against_a_busy_worker(model: &str) {
    let files = tempfile::tempdir().unwrap();
    let server = TestServer::start(
        model,
        &["--workers", "1", "--files", files.path().to_str().unwrap()],
    );
    let mut hog = server.connect();
    hog.write_all(b"PUT /files/hog.bin HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n")
        .unwrap();
    hog.write_all(&[0u8; 1000]).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || leftovers(files.path())
            .iter()
            .any(|n| n.starts_with(".upload-"))),
        "the worker never took the slow upload"
    );
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let out = stress(
        tmp.path(),
        &[
            "--url",
            &server.url("/files/"),
            "--ops",
            "upload",
            "--sizes",
            "64K",
            "--clients",
            "2",
            "--timeout",
            "1s",
            "--out",
            out_dir.path().to_str().unwrap(),
        ],
    );
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("2 of 2 transfers failed"), "{stderr}");
    // Transfers, cleanup and listing are each bounded by the 1 s timeout.
    assert!(took < Duration::from_secs(30), "the run took {took:?}");
    assert_table_columns(&stdout);
    let rows = csv_rows(&out_dir.path().join("stress.csv"));
    assert_eq!(rows.len(), 1);
    assert_counts_agree(&rows);
    assert_eq!(
        (num(&rows[0], "succeeded"), num(&rows[0], "failed")),
        (0, 2)
    );
    assert!(rows[0]["error"].contains("timed out"), "{:?}", rows[0]);
    assert!(out_dir.path().join("stress.json").is_file());
    assert!(out_dir.path().join("stress.md").is_file());
    drop(hog);
}

#[test]
fn a_client_that_cannot_be_served_in_time_fails_thread_pool() {
    timeout_against_a_busy_worker("thread-pool");
}

#[test]
fn a_client_that_cannot_be_served_in_time_fails_prefork() {
    timeout_against_a_busy_worker("prefork");
}

#[test]
fn a_server_that_does_not_start_fails_its_cells_and_the_run_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    // With 40 descriptors, 100 reactors cannot open their 100 listeners and
    // that server exits at once; the 1-reactor server after it is fine.
    let cmd = format!(
        "ulimit -n 40 && exec '{}' stress --models reactors --server-workers 100,1 \
         --clients 1,2 --sizes 64K --timeout 30s --out '{}'",
        loadlab_bin(),
        out_dir.path().display()
    );
    let out = Command::new("sh")
        .args(["-c", &cmd])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Some transfers were verified, so the run measured something: exit 3
    // (stress's built-in condition held), not 1 (nothing usable).
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("stress: 6 of 12 transfers failed"),
        "{stderr}"
    );
    assert_table_columns(&stdout);
    let rows = csv_rows(&out_dir.path().join("stress.csv"));
    // Every cell of both servers has a row: 2 ops x 2 client pools x 2.
    assert_eq!(rows.len(), 8, "{rows:?}");
    assert_counts_agree(&rows);
    for r in &rows {
        match r["server_workers"].as_str() {
            "100" => {
                assert_eq!(num(r, "failed"), num(r, "clients"), "{r:?}");
                assert!(r["error"].contains("did not start"), "{r:?}");
            }
            "1" => assert_eq!(r["failed"], "0", "{r:?}"),
            w => panic!("unexpected workers {w}"),
        }
    }
    let json = json_file(&out_dir.path().join("stress.json"));
    assert_eq!(json["rows"].as_array().unwrap().len(), 8);
    assert!(
        json["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("did not start")),
        "{json}"
    );
    let md = std::fs::read_to_string(out_dir.path().join("stress.md")).unwrap();
    assert_eq!(md.lines().filter(|l| l.starts_with("| ")).count(), 2 + 8);
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
}

/// Starts `loadlab stress` in the background: uploads and downloads by
/// 1 and 2 clients against servers of `model`, with `args` for the rest.
fn spawn_stress(tmp: &Path, out_dir: &Path, args: &[&str], model: &str) -> std::process::Child {
    Command::new(loadlab_bin())
        .args(["stress", "--ops", "upload,download", "--clients", "1,2"])
        .args(args)
        .args(["--models", model, "--timeout", "30s", "--out"])
        .arg(out_dir)
        .env("TMPDIR", tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_stress_takes_its_server_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let mut job = spawn_stress(
        tmp.path(),
        out_dir.path(),
        &["--sizes", "4M", "--server-workers", "1,2,3,4"],
        "thread-pool",
    );
    let pid = job.id() as i32;
    let mut servers = Vec::new();
    let found = wait_until(Duration::from_secs(30), || {
        servers = descendants(pid);
        !servers.is_empty()
    });
    // Frozen, stress cannot stop its server the normal way in between.
    let stress = nix::unistd::Pid::from_raw(pid);
    nix::sys::signal::kill(stress, nix::sys::signal::Signal::SIGSTOP).unwrap();
    servers = descendants(pid);
    let running: Vec<i32> = servers.iter().copied().filter(|&p| alive(p)).collect();
    job.kill().unwrap();
    job.wait().unwrap();
    assert!(found && !running.is_empty(), "no server was running");
    assert!(
        wait_until(Duration::from_secs(10), || !running
            .iter()
            .any(|&p| alive(p))),
        "servers {running:?} outlived the killed stress"
    );
}

#[test]
fn a_server_whose_master_died_leaves_no_workers_behind() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let mut job = spawn_stress(
        tmp.path(),
        out_dir.path(),
        &["--sizes", "8M", "--server-workers", "2,3,4,5"],
        "prefork",
    );
    let pid = job.id() as i32;
    // A prefork server with its workers forked: stress's child, whose
    // own children are the workers.
    let master_with_workers = || {
        child_pids(pid)
            .into_iter()
            .map(|m| (m, child_pids(m)))
            .find(|(_, w)| w.len() >= 2)
    };
    let mut server = None;
    let found = wait_until(Duration::from_secs(30), || {
        server = master_with_workers();
        server.is_some()
    });
    // Frozen, stress cannot stop that server before its master is killed.
    kill(Pid::from_raw(pid), Signal::SIGSTOP).unwrap();
    let server = master_with_workers().or(server);
    let (master, workers) = server.clone().unwrap_or_default();
    if found {
        kill(Pid::from_raw(master), Signal::SIGKILL).unwrap();
    }
    kill(Pid::from_raw(pid), Signal::SIGCONT).unwrap();
    // The orphaned workers go on serving, so stress finishes its cells,
    // then stops what is left of that server's process group.
    let finished = wait_until(Duration::from_secs(60), || {
        job.try_wait().unwrap().is_some()
    });
    let gone = wait_until(Duration::from_secs(10), || {
        !workers.iter().any(|&w| alive(w))
    });
    let left: Vec<i32> = workers.iter().copied().filter(|&w| alive(w)).collect();
    for &w in &left {
        let _ = kill(Pid::from_raw(w), Signal::SIGKILL);
    }
    if !finished {
        let _ = job.kill();
    }
    let _ = job.wait();
    assert!(found, "no prefork server with workers was seen");
    assert!(
        finished,
        "stress did not finish after its server's master died"
    );
    assert!(
        gone,
        "workers {left:?} of the killed master {master} outlived stress"
    );
}

/// A server with framing defects is checked before its first cell: the
/// diagnosis names the defect in stress.json, stress.md and the page, and
/// the cells still run (here they fail: it has no file API).
#[test]
fn a_broken_server_is_diagnosed_before_its_cells() {
    let extra = 3 + std::process::id() % 4;
    let zoo = zoo::ZooServer::start("extra_bytes.py", &[extra.to_string()]);
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = stress(
        tmp.path(),
        &[
            "--url",
            &zoo.url("/files/"),
            "--ops",
            "upload",
            "--sizes",
            "1K",
            "--clients",
            "1",
            "--timeout",
            "2s",
            "--out",
            out_dir.path().to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let said = format!("check {}: ", zoo.url("/files/"));
    let line = stderr.lines().find(|l| l.contains(&said)).unwrap_or("");
    assert!(line.contains("bytes-after-body"), "{stderr}");
    let doc = json_file(&out_dir.path().join("stress.json"));
    let d = &doc["diagnoses"][0];
    let failed: Vec<&str> = d["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "fail")
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert!(failed.contains(&"bytes-after-body"), "{d}");
    let md = std::fs::read_to_string(out_dir.path().join("stress.md")).unwrap();
    assert!(
        md.contains("## Targets") && md.contains(&format!("{extra} bytes after")),
        "{md}"
    );
    let html = std::fs::read_to_string(out_dir.path().join("index.html")).unwrap();
    assert!(html.contains("<section id=\"targets\">"), "{html}");
}
