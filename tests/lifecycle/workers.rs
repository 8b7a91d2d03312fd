//! Workers: prefork replaces one killed under load, a thread pool of 0
//! grows and shrinks, and a model that cannot start all its workers (too
//! few processes allowed) fails or says so in one line.

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;

use super::support::{good_request, good_request_at, WAIT};

#[test]
fn prefork_replaces_a_worker_killed_under_load() {
    let mut server = TestServer::start("prefork", &["--workers", "3"]);
    let pid = server.pid();
    assert!(wait_until(WAIT, || child_pids(pid).len() == 3), "3 workers");
    let before = child_pids(pid);

    // Load from two client threads until told to stop (bounded to 20 s).
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let addr = server.addr;
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let (stop, ok, failed) = (stop.clone(), ok.clone(), failed.clone());
            std::thread::spawn(move || {
                let until = Instant::now() + Duration::from_secs(20);
                while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                    if good_request_at(addr) {
                        ok.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    assert!(
        wait_until(WAIT, || ok.load(Ordering::Relaxed) >= 50),
        "load runs"
    );

    let victim = before[0];
    assert!(send_signal(victim, 9), "SIGKILL {victim}");
    assert!(
        wait_until(WAIT, || {
            let now = child_pids(pid);
            now.len() == 3 && !now.contains(&victim)
        }),
        "the pool is back to 3 workers: {:?}",
        child_pids(pid)
    );
    let after_replace = ok.load(Ordering::Relaxed);
    assert!(
        wait_until(WAIT, || ok.load(Ordering::Relaxed) >= after_replace + 50),
        "requests keep being answered after the replacement"
    );
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    // Only the connection the killed worker held can be lost.
    assert!(
        failed.load(Ordering::Relaxed) <= 1,
        "{} requests failed",
        failed.load(Ordering::Relaxed)
    );
    assert!(good_request(&server));
    assert_eq!(server.terminate(), Some(0));
}

#[test]
fn thread_pool_of_0_workers_grows_on_demand_and_shrinks_when_idle() {
    let server = TestServer::start("thread-pool", &["--workers", "0"]);
    let pid = server.pid();
    assert!(server.line.contains("workers=0"), "{}", server.line);
    let base = thread_count(pid);
    // Eight slow clients, each holding a worker with half a request.
    let mut slow: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut s = server.connect();
            s.write_all(b"GET /bytes/2 HTTP/1.1\r\nHost: t\r\n")
                .unwrap();
            s
        })
        .collect();
    assert!(
        wait_until(WAIT, || thread_count(pid) >= base + 8),
        "the pool grew from {base} to only {} threads",
        thread_count(pid)
    );
    // All eight are being served at once: each completes.
    for s in &mut slow {
        s.write_all(b"Connection: close\r\n\r\n").unwrap();
    }
    for s in &mut slow {
        let r = read_response(s, false).unwrap();
        assert_eq!((r.status, r.body), (200, b"ab".to_vec()));
    }
    // Idle workers exit after IDLE_EXIT (5 s).
    assert!(
        wait_until(Duration::from_secs(12), || thread_count(pid) <= base + 1),
        "the pool did not shrink: {} threads, {base} at start",
        thread_count(pid)
    );
    assert_alive(&server);
}

/// RLIMIT_NPROC counts every process and thread of user nobody, not only
/// the server's: tests that run as nobody at the same time would eat each
/// other's budget (one server's forked workers left another none for its
/// offload threads), so they take turns: under `cargo test` by this lock,
/// under nextest (a process per test) by the `nobody` test group.
fn one_nobody_test_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// `loadlab serve ARGS...` as user nobody with at most `nproc` processes
/// and threads for that user (root is exempt from the limit), from a copy
/// of the binary in `dir` that nobody may run, stderr to `dir/stderr`.
/// Returns the command and the marker its command line carries.
fn serve_as_nobody_command(
    dir: &std::path::Path,
    nproc: u32,
    args: &[&str],
) -> (std::process::Command, String) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let bin = dir.join("loadlab-nproc");
    std::fs::copy(loadlab_bin(), &bin).unwrap();
    // The upload directory doubles as a marker no other process carries.
    let files = dir.join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::set_permissions(&files, std::fs::Permissions::from_mode(0o777)).unwrap();
    let marker = files.to_str().unwrap().to_string();
    let mut cmd = tool("setpriv");
    cmd.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "prlimit",
    ])
    .arg(format!("--nproc={nproc}"))
    .arg("--")
    .arg(&bin)
    .args(["serve", "--addr", "127.0.0.1:0", "--files", &marker])
    .args(args)
    // A file, not a pipe: workers left behind would hold a pipe open
    // and a read of it would never end.
    .stderr(std::fs::File::create(dir.join("stderr")).unwrap());
    (cmd, marker)
}

/// Runs `serve_as_nobody_command` and waits for it to exit. Returns (exit
/// code, stderr, the marker its command line carries).
fn serve_as_nobody_with_nproc(nproc: u32, args: &[&str]) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (mut cmd, marker) = serve_as_nobody_command(dir.path(), nproc, args);
    let mut child = cmd.stdout(std::process::Stdio::null()).spawn().unwrap();
    let mut status = None;
    wait_until(WAIT, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    (status.and_then(|s| s.code()), err, marker)
}

/// Processes whose command line contains `marker`, killed so that a
/// failing test leaves nothing behind; returns their pids.
fn kill_processes_with(marker: &str) -> Vec<i32> {
    let left: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(marker))
                .unwrap_or(false)
        })
        .collect();
    for &pid in &left {
        send_signal(pid, libc::SIGKILL);
    }
    left
}

#[test]
fn regression_prefork_left_its_workers_serving_when_a_fork_failed() {
    let _turn = one_nobody_test_at_a_time();
    // 50 workers with room for about 8 processes: the server must fail in
    // one line and take the workers it did fork with it.
    let (code, err, marker) =
        serve_as_nobody_with_nproc(8, &["--model", "prefork", "--workers", "50"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("cannot fork prefork worker"), "{err}");
    let left = kill_processes_with(&marker);
    assert!(left.is_empty(), "workers left running: {left:?}");
}

#[test]
fn regression_reactors_panicked_and_hung_when_a_thread_would_not_start() {
    let _turn = one_nobody_test_at_a_time();
    let (code, err, marker) =
        serve_as_nobody_with_nproc(8, &["--model", "reactors", "--workers", "50"]);
    assert_eq!(code, Some(1), "exited in time with status 1: {err}");
    assert!(err.contains("cannot start reactor"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let left = kill_processes_with(&marker);
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn regression_thread_pool_announced_workers_that_never_started() {
    let _turn = one_nobody_test_at_a_time();
    use std::io::BufRead;
    // 50 threads asked with room for about 12: the pool serves with those
    // that started, says so in one line, and announces that number.
    let dir = tempfile::tempdir().unwrap();
    let (mut cmd, marker) = serve_as_nobody_command(
        dir.path(),
        12,
        &["--model", "thread-pool", "--workers", "50"],
    );
    let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    let read = std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
    let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    let outcome = (|| {
        read.map_err(|e| e.to_string())?;
        let addr = loadlab::proc::child::parse_startup_line(line.trim_end())
            .ok_or_else(|| format!("no start-up line: {line:?}, stderr {err:?}"))?;
        let workers: usize = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("workers="))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("no workers= in {line:?}"))?;
        let failures: Vec<&str> = err.lines().filter(|l| l.contains("pool thread")).collect();
        let said = format!("started {workers} of 50 pool threads");
        if !(1..50).contains(&workers) || failures.len() != 1 || !failures[0].contains(&said) {
            return Err(format!("announced {line:?}; stderr {err:?}"));
        }
        // It serves with the threads it has.
        let mut s = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(WAIT)).unwrap();
        s.write_all(b"GET /bytes/2 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .map_err(|e| e.to_string())?;
        let r = read_response(&mut s, false).map_err(|e| e.to_string())?;
        (r.status == 200)
            .then_some(())
            .ok_or(format!("answered {}", r.status))
    })();
    let _ = child.kill();
    let _ = child.wait();
    kill_processes_with(&marker);
    outcome.unwrap();
}
