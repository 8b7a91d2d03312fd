//! An interrupted `loadlab stress` (and `sweep --preset e2`, which runs
//! it) stops its servers, removes its scratch space with the parents it
//! made, writes the rows made so far and exits 130; progress shows one
//! line per cell without a terminal; `--sizes` is checked against the
//! free space before anything is written; the SHA-256 of the test content
//! counts inside `--timeout` (issue 19 item 10).

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;

/// Starts `loadlab ARGS` with TMPDIR at `tmp`; its stderr lines arrive on
/// the channel as they are written.
fn start(tmp: &Path, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(loadlab_bin())
        .args(args)
        .env("TMPDIR", tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Waits for a stderr line containing `want`, noting the child's
/// descendants (its servers) meanwhile; all lines seen so far.
fn wait_for_line(
    child: &mut Child,
    rx: &mpsc::Receiver<String>,
    want: &str,
    servers: &mut Vec<i32>,
) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(120);
    let mut seen = Vec::new();
    while Instant::now() < until {
        let ended = child.try_wait().ok().flatten();
        for p in descendants(child.id() as i32) {
            if !servers.contains(&p) {
                servers.push(p);
            }
        }
        // Every line already written, so the signal follows the wanted
        // one by no more than one scan of /proc.
        let first = rx.recv_timeout(Duration::from_millis(20)).ok();
        for line in first.into_iter().chain(rx.try_iter()) {
            let done = line.contains(want);
            seen.push(line);
            if done {
                return seen;
            }
        }
        if let Some(st) = ended {
            panic!("ended ({st}) before a line with {want:?}; stderr: {seen:#?}");
        }
    }
    panic!("no line with {want:?} within 120 s; stderr so far: {seen:#?}");
}

/// Waits until at least one server of the child's is seen running: a
/// quick cell may start and stop its server between two scans, so the
/// line alone does not prove one was seen (the check of servers outliving
/// the interrupt would then check nothing).
fn wait_for_server(child: &mut Child, servers: &mut Vec<i32>) {
    let until = Instant::now() + Duration::from_secs(60);
    while servers.is_empty() && Instant::now() < until {
        servers.extend(descendants(child.id() as i32));
        if child.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sends SIGINT and waits (bounded) for the exit status.
fn interrupt(child: &mut Child) -> i32 {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code().unwrap_or(-1);
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("stress did not end within 60 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn csv_rows(path: &Path) -> usize {
    csv::Reader::from_path(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .records()
        .count()
}

/// What an interrupted run must leave: rows so far in every file, no
/// scratch space, no server.
fn assert_interrupted_cleanly(code: i32, out: &Path, tmp: &Path, servers: &[i32], cells: usize) {
    assert_eq!(code, 130);
    let rows = csv_rows(&out.join("stress.csv"));
    assert!(rows >= 1 && rows < cells, "{rows} rows of {cells}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("stress.json")).unwrap()).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), rows);
    assert_eq!(json["scratch_removed"], true);
    let left: Vec<_> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left in the temporary directory: {left:?}");
    assert!(!servers.is_empty(), "no server was seen running");
    assert!(
        wait_until(Duration::from_secs(10), || !servers
            .iter()
            .any(|&p| alive(p))),
        "servers {servers:?} outlived the interrupted stress"
    );
}

#[test]
fn regression_an_interrupted_stress_left_its_scratch_and_wrote_no_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("a/nested/path");
    let (mut child, rx) = start(
        tmp.path(),
        &[
            "stress",
            "--ops",
            "upload,download",
            "--sizes",
            "2M,3M",
            "--clients",
            "1,2",
            "--server-workers",
            "1,2,3,4",
            "--models",
            "thread-pool",
            "--timeout",
            "30s",
            "--scratch",
            scratch.to_str().unwrap(),
            "--out",
            out.path().to_str().unwrap(),
        ],
    );
    let mut servers = Vec::new();
    let seen = wait_for_line(&mut child, &rx, "loadlab: cell 2/32 ", &mut servers);
    wait_for_server(&mut child, &mut servers);
    assert!(
        seen.iter().any(|l| l == "loadlab: 32 cells to run"),
        "{seen:#?}"
    );
    let code = interrupt(&mut child);
    // The nested --scratch went with the parents stress made for it.
    assert!(!tmp.path().join("a").exists());
    assert_interrupted_cleanly(code, out.path(), tmp.path(), &servers, 32);
    let rest: Vec<String> = rx.try_iter().collect();
    assert!(
        rest.iter().any(|l| l.contains("interrupted")),
        "no line says so: {rest:#?}"
    );
}

#[test]
fn sweep_preset_e2_shows_progress_and_passes_ctrl_c_on() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().join("e2");
    let (mut child, rx) = start(
        tmp.path(),
        &[
            "sweep",
            "--preset",
            "e2",
            "--quick",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    let mut servers = Vec::new();
    wait_for_line(&mut child, &rx, "loadlab: cell 1/32 ", &mut servers);
    wait_for_server(&mut child, &mut servers);
    let code = interrupt(&mut child);
    assert_interrupted_cleanly(code, &out_dir, tmp.path(), &servers, 32);
}

#[test]
fn sizes_beyond_the_free_space_are_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = Command::new(loadlab_bin())
        .args([
            "stress",
            "--sizes",
            "900G",
            "--clients",
            "1000",
            "--scratch",
        ])
        .arg(tmp.path().join("x/y"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--sizes: needs "), "{err}");
    let made: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(made.is_empty(), "written before the check: {made:?}");
}

#[test]
fn the_sha256_of_the_test_content_counts_inside_the_timeout() {
    // Hashing 256 MiB takes far longer than 10 ms: the transfer fails
    // within its timeout, saying why, instead of the digest being made
    // beforehand, outside any bound.
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let o = Command::new(loadlab_bin())
        .args([
            "stress",
            "--ops",
            "upload",
            "--sizes",
            "256M",
            "--clients",
            "1",
        ])
        .args([
            "--server-workers",
            "1",
            "--models",
            "thread-pool",
            "--timeout",
            "10ms",
        ])
        .arg("--out")
        .arg(out.path())
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("stress.json")).unwrap()).unwrap();
    let error = json["rows"][0]["error"].as_str().unwrap();
    assert!(error.contains("SHA-256"), "{error}");
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
}
