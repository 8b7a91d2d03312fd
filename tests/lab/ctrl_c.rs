//! Ctrl-C during a sweep, pressed as a terminal does (SIGINT to the process
//! group): the target stops, complete runs are kept, the report is written.

use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use loadlab::results::raw;

use super::support::{finish, ok_rows, serial, sweep};

/// Starts `loadlab sweep ARGS --out OUT` in its own process group, as a
/// shell starts a foreground job, so the test can press Ctrl-C: SIGINT to
/// the whole group, as the terminal sends it.
fn spawn_sweep(args: &[&str], out: &Path) -> Child {
    Command::new(loadlab_bin())
        .arg("sweep")
        .args(args)
        .arg("--out")
        .arg(out)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn loadlab sweep")
}

fn ctrl_c(job: &Child) {
    let pgid = nix::unistd::Pid::from_raw(job.id() as i32);
    nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
}

/// Rows in raw.csv so far (0 while it does not exist or is empty).
fn rows_now(out: &Path) -> usize {
    raw::read(out).map_or(0, |r| r.len())
}

/// Loopback ports `pid` listens on, from /proc/PID/net/tcp and its
/// socket descriptors.
fn listening_ports(pid: i32) -> Vec<u16> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    let inodes: Vec<String> = fds
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            l.strip_prefix("socket:[")
                .and_then(|r| r.strip_suffix(']'))
                .map(str::to_string)
        })
        .collect();
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // local_address is HEXIP:HEXPORT, st 0A is LISTEN, inode is field 9.
            let port = u16::from_str_radix(f.get(1)?.split(':').nth(1)?, 16).ok()?;
            (f.get(3) == Some(&"0A") && inodes.iter().any(|i| Some(&i.as_str()) == f.get(9)))
                .then_some(port)
        })
        .collect()
}

fn gone(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    })
}

/// The target process a sweep started (its only child), once it is up.
fn target_of(job: &Child) -> i32 {
    let mut pid = 0;
    assert!(
        wait_until(Duration::from_secs(10), || {
            pid = child_pids(job.id() as i32).first().copied().unwrap_or(0);
            pid != 0
        }),
        "the sweep started no target"
    );
    pid
}

#[test]
fn ctrl_c_stops_the_target_keeps_complete_runs_and_renders_the_report() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let args = [
        "-T",
        "model:event-loop",
        // Long enough that the Ctrl-C below lands inside run 2 however
        // slow a loaded machine is to start it.
        "--duration",
        "4s",
        "--repeat",
        "2",
        "--concurrency",
        "2",
    ];
    let job = spawn_sweep(&args, &out);
    let server = target_of(&job);
    let mut ports = Vec::new();
    assert!(wait_until(Duration::from_secs(10), || {
        ports = listening_ports(server);
        !ports.is_empty()
    }));
    // Ctrl-C in the middle of the second run.
    assert!(
        wait_until(Duration::from_secs(30), || rows_now(&out) == 1),
        "the first run was not recorded"
    );
    std::thread::sleep(Duration::from_millis(600));
    let before = std::fs::read(out.join("raw.csv")).unwrap();
    ctrl_c(&job);
    let t = Instant::now();
    let (code, stdout, stderr) = finish(job, Duration::from_secs(10));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?} to stop",
        t.elapsed()
    );
    assert_eq!(code, 130, "exit status after Ctrl-C: {stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(
        stdout.contains("Requests per second"),
        "the table is printed: {stdout}"
    );

    // The target is stopped: the process is gone and its port refuses.
    assert!(
        wait_until(Duration::from_secs(5), || gone(server)),
        "target {server} still runs"
    );
    for p in &ports {
        assert!(
            TcpStream::connect(("127.0.0.1", *p)).is_err(),
            "port {p} still accepts"
        );
    }
    // The cut-short run is not in raw.csv; the complete one is, intact.
    assert_eq!(std::fs::read(out.join("raw.csv")).unwrap(), before);
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 1);
    ok_rows(&rows);
    assert!(
        (rows[0].time_taken_s - 4.0).abs() < 0.2,
        "{:?}",
        rows[0].time_taken_s
    );
    let html = std::fs::read_to_string(out.join("index.html")).expect("index.html rendered");
    assert!(
        html.contains("raw.csv holds 1 runs: 1 measured"),
        "report from the rows so far"
    );

    // Run again: only the run that was cut short is made.
    let (_, stderr, code) = sweep(&args, &out);
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    assert_eq!(
        rows.iter().map(|r| r.repeat).collect::<Vec<_>>(),
        vec![1, 2]
    );
    ok_rows(&rows);
}

#[test]
fn ctrl_c_ends_the_wait_for_a_cmd_target_at_once() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    // Never listens; loadlab would wait 15 s for it.
    let job = spawn_sweep(
        &["-T", "cmd:sleep 60 # {port}", "--requests", "10", "-q"],
        &out,
    );
    let sleeper = target_of(&job);
    std::thread::sleep(Duration::from_millis(500));
    ctrl_c(&job);
    let t = Instant::now();
    let (code, _, stderr) = finish(job, Duration::from_secs(10));
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(code, 130, "{stderr}");
    assert!(
        wait_until(Duration::from_secs(5), || gone(sleeper)),
        "the command still runs"
    );
    assert_eq!(
        rows_now(&out),
        0,
        "an interrupted start is not a failed target"
    );
    assert!(out.join("index.html").is_file());
}
