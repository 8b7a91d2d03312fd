//! Process and resource behaviour of the models: prefork replaces a worker
//! killed under load, SIGTERM lets a slow download finish, running out of
//! descriptors neither kills nor spins the server, the connection limit
//! queues the rest, a silent client waits in the kernel (TCP_DEFER_ACCEPT),
//! and a thread pool of 0 workers grows and shrinks.

#[macro_use]
mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;

per_model!(
    sigterm_during_slow_download_lets_it_finish,
    sigterm_exit_is_bounded_by_the_grace_period,
    running_out_of_descriptors_neither_kills_nor_spins,
    regression_sigterm_reset_requests_in_flight_on_keep_alive_connections,
    regression_sigterm_during_startup_waited_out_the_grace_period,
);

const WAIT: Duration = Duration::from_secs(10);

/// One GET on a fresh connection; true if it got a 200 with the full body.
fn good_request(server: &TestServer) -> bool {
    good_request_at(server.addr)
}

fn good_request_at(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(WAIT));
    if s.write_all(b"GET /500B.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    matches!(read_response(&mut s, false), Ok(r) if r.status == 200 && r.body.len() == 500)
}

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

fn sigterm_during_slow_download_lets_it_finish(model: &str) {
    const SIZE: usize = 16 * 1024 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let content = pattern(SIZE);
    std::fs::write(dir.path().join("big.bin"), &content).unwrap();
    let root = dir.path().to_str().unwrap();
    let mut server = TestServer::start(model, &["--root", root]);

    // Most of the file is still on the server when SIGTERM arrives.
    let (mut s, mut got) = start_slow_download(server.addr, "/big.bin", 256 * 1024);
    let mut buf = vec![0u8; 64 * 1024];

    assert!(send_signal(server.pid(), 15));
    // The server has seen the signal (it polls every 100 ms) and must
    // still be there, sending.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "{model} exited with a download in flight"
    );
    // It has stopped accepting: a new connection is refused or never served.
    assert!(
        !served_within(server.addr, Duration::from_secs(1)),
        "{model} served a new connection after SIGTERM"
    );
    // Read the rest slowly: ~2 ms per 64 KiB, about half a second in all.
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("{model}: download broken after {} bytes: {e}", got.len()),
        }
        if got.len() >= SIZE + 200 {
            // Head plus the whole body: the server may keep the
            // connection open only until it notices it is idle.
            let head_end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            if got.len() - head_end >= SIZE {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let head_end = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head")
        + 4;
    let head = String::from_utf8_lossy(&got[..head_end]).to_string();
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(
        head.contains(&format!("Content-Length: {SIZE}\r\n")),
        "{head}"
    );
    assert_eq!(got.len() - head_end, SIZE, "{model}: body length");
    assert!(got[head_end..] == content[..], "{model}: body differs");
    // The head went out before SIGTERM (so it could not say close); the
    // connection is closed once the response is complete.
    assert!(is_closed(&mut s, WAIT), "{model} kept the connection open");
    drop(s);
    assert_eq!(server.terminate(), Some(0), "{model} exit status");
}

/// Starts `loadlab serve` under `ulimit -n LIMIT` through sh, so the server
/// runs out of descriptors long before the test does.
fn start_with_fd_limit(model: &str, limit: u32, extra: &[&str]) -> TestServer {
    let mut cmd = Command::new("sh");
    let mut script = format!(
        "ulimit -n {limit} && exec '{}' serve --model {model} --addr 127.0.0.1:0",
        loadlab_bin()
    );
    let files = tempfile::tempdir().unwrap();
    script.push_str(&format!(" --files '{}'", files.path().display()));
    for a in extra {
        script.push_str(&format!(" '{a}'"));
    }
    cmd.arg("-c").arg(script);
    let mut server = TestServer::start_command(cmd);
    server.files = Some(files);
    server
}

/// True if a fresh connection gets a 200 within `wait`.
fn served_within(addr: SocketAddr, wait: Duration) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, wait) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(wait));
    if s.write_all(b"GET /500B.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

/// A client that reads too slowly to finish within the grace period does
/// not keep the server alive: it exits soon after the grace period ends.
fn sigterm_exit_is_bounded_by_the_grace_period(model: &str) {
    const SIZE: usize = 64 * 1024 * 1024;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.bin"), pattern(SIZE)).unwrap();
    let root = dir.path().to_str().unwrap();
    let mut server = TestServer::start(model, &["--root", root, "--shutdown-grace", "1s"]);
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(16 * 1024).unwrap();
    sock.connect(&server.addr.into()).unwrap();
    let mut s: TcpStream = sock.into();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 4096];
    assert!(s.read(&mut buf).unwrap() > 0);
    let stopped = Instant::now();
    assert!(send_signal(server.pid(), 15));
    // Keep reading, slowly: ~1 MB/s would need a minute for the file.
    let mut exited = None;
    while stopped.elapsed() < Duration::from_secs(15) {
        if let Ok(Some(status)) = server.child.try_wait() {
            exited = Some(status);
            break;
        }
        if matches!(s.read(&mut buf), Ok(0) | Err(_)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(4));
    }
    let status = exited.unwrap_or_else(|| panic!("{model} still running 15 s after SIGTERM"));
    assert!(
        stopped.elapsed() >= Duration::from_millis(900),
        "{model} cut the download before the grace period ended"
    );
    assert_eq!(status.code(), Some(0), "{model} exit status");
}

fn running_out_of_descriptors_neither_kills_nor_spins(model: &str) {
    let mut server = start_with_fd_limit(model, 64, &[]);
    let pid = server.pid();
    assert_alive(&server);
    // Far more connections than 64 descriptors allow; they stay open and
    // idle (the idle timeout is 5 s, longer than this test holds them).
    let mut conns: Vec<TcpStream> = (0..150).map(|_| server.connect()).collect();
    // Let the server accept what it can and hit EMFILE.
    let fds = || fd_count(pid) + child_pids(pid).into_iter().map(fd_count).sum::<usize>();
    let mut last = 0;
    wait_until(Duration::from_secs(2), || {
        let now = fds();
        let settled = now == last;
        last = now;
        settled && now > 0
    });
    let t0 = cpu_ticks(pid);
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_ticks(pid) - t0;
    let elapsed = start.elapsed();
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "{model} died at the descriptor limit"
    );
    // A spinning accept loop burns a whole core: ~100 ticks a second.
    assert!(
        used < 25,
        "{model} used {used} ticks of CPU in {elapsed:?} at the descriptor limit"
    );
    // A request on one of the accepted connections is still answered
    // (blocking models answer the one they are serving).
    conns.truncate(0);
    assert!(
        wait_until(WAIT, || good_request(&server)),
        "{model} serves again once connections close"
    );
    assert_alive(&server);
    assert_eq!(server.terminate(), Some(0));
}

/// A client that connects and says nothing does not hold up the
/// iterative server: the listener hands over a connection only once its
/// request has arrived (TCP_DEFER_ACCEPT). With --no-defer-accept the
/// server takes the silent connection first, and the next client waits
/// out its header timeout.
#[test]
fn a_silent_connection_waits_in_the_kernel_unless_defer_accept_is_off() {
    for (flag, silent_served_first) in [(None, false), (Some("--no-defer-accept"), true)] {
        let mut args = vec!["--header-timeout", "2s"];
        args.extend(flag);
        let server = TestServer::start("iterative", &args);
        let silent = server.connect();
        let mut talker = server.connect();
        talker
            .write_all(b"GET /bytes/2 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .unwrap();
        let r = read_response(&mut talker, false).unwrap();
        assert_eq!((r.status, r.body), (200, b"ab".to_vec()), "{flag:?}");
        // Had the server finished with the silent connection (its 408 or
        // its close) before it answered the talker?
        silent.set_nonblocking(true).unwrap();
        let served = silent.peek(&mut [0u8; 1]).is_ok();
        assert_eq!(served, silent_served_first, "{flag:?}");
    }
}

// model subset: the models that serve several connections at once in a
// process; in the others each worker holds one, and the limit never binds.
// One test each, so the first failure does not hide the rest.
#[test]
fn max_connections_queues_the_rest_thread_per_conn() {
    max_connections_queues_the_rest("thread-per-conn", &[]);
}

#[test]
fn max_connections_queues_the_rest_thread_pool() {
    max_connections_queues_the_rest("thread-pool", &["--workers", "4"]);
}

#[test]
fn max_connections_queues_the_rest_event_loop() {
    max_connections_queues_the_rest("event-loop", &[]);
}

#[test]
fn max_connections_queues_the_rest_reactors() {
    max_connections_queues_the_rest("reactors", &["--workers", "1"]);
}

fn max_connections_queues_the_rest(model: &str, extra: &[&str]) {
    let mut args = vec!["--max-connections", "2"];
    args.extend_from_slice(extra);
    let server = TestServer::start(model, &args);
    // Two connections with half a request each hold both slots.
    let mut held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = server.connect();
            s.write_all(b"GET /bytes/1 HTTP/1.1\r\nHost: t\r\n")
                .unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut third = server.connect();
    third
        .write_all(b"GET /bytes/3 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    third
        .set_read_timeout(Some(Duration::from_millis(400)))
        .unwrap();
    let mut b = [0u8; 1];
    assert!(
        third.read(&mut b).is_err(),
        "{model}: a third connection was served past --max-connections 2"
    );
    // Finishing one held request frees a slot; the third is served.
    held[0].write_all(b"Connection: close\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut held[0], false).unwrap().body, b"a");
    third.set_read_timeout(Some(WAIT)).unwrap();
    let r = read_response(&mut third, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"abc".to_vec()), "{model}");
    held[1].write_all(b"\r\n").unwrap();
    assert_eq!(read_response(&mut held[1], false).unwrap().body, b"a");
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

/// Keep-alive clients sending back to back while SIGTERM arrives: every
/// request sent is answered (the last ones with `Connection: close`), or
/// the connection is closed before the request could be read. Returns the
/// number of requests that got neither an answer nor a clean close.
fn keep_alive_load_through_sigterm(server: &mut TestServer, clients: usize) -> (usize, usize) {
    let addr = server.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (stop, answered) = (stop.clone(), answered.clone());
            std::thread::spawn(move || -> usize {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(WAIT)).unwrap();
                let until = Instant::now() + Duration::from_secs(20);
                while Instant::now() < until {
                    if s.write_all(b"GET /bytes/100 HTTP/1.1\r\nHost: t\r\n\r\n")
                        .is_err()
                    {
                        return 1;
                    }
                    match read_response(&mut s, false) {
                        Ok(r) if r.status == 200 && r.body.len() == 100 => {
                            answered.fetch_add(1, Ordering::Relaxed);
                            if r.header("connection") == Some("close") {
                                return 0;
                            }
                        }
                        // EOF or reset with a request unanswered.
                        _ => return 1,
                    }
                    if stop.load(Ordering::Relaxed) {
                        return 0;
                    }
                }
                0
            })
        })
        .collect();
    assert!(wait_until(WAIT, || answered.load(Ordering::Relaxed) >= 200));
    assert!(send_signal(server.pid(), 15));
    let lost: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    assert_eq!(server.terminate(), Some(0));
    (lost, answered.load(Ordering::Relaxed))
}

/// Regression: at SIGTERM every model closed keep-alive connections the
/// moment they were idle, without reading: a request the client had just
/// sent was reset unread, so clients under load lost their last request.
/// Now an idle connection is closed only after a read tick finds nothing.
fn regression_sigterm_reset_requests_in_flight_on_keep_alive_connections(model: &str) {
    let mut server = TestServer::start(model, &["--workers", "4"]);
    // The iterative server serves one connection; a second would wait in
    // the listen queue, which no model can answer after it stops accepting.
    let clients = if model == "iterative" { 1 } else { 3 };
    let (lost, answered) = keep_alive_load_through_sigterm(&mut server, clients);
    assert_eq!(
        lost, 0,
        "{model}: {lost} requests lost, {answered} answered"
    );
}

/// Regression: connections accepted into the thread pool's queue before
/// SIGTERM were closed unread when a worker took them after it.
#[test]
fn regression_sigterm_dropped_connections_queued_in_the_pool() {
    let mut server = TestServer::start("thread-pool", &["--workers", "1"]);
    let mut slow = server.connect();
    slow.write_all(b"GET /bytes/1 HTTP/1.1\r\nHost: t\r\n")
        .unwrap();
    let mut queued: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut s = server.connect();
            s.write_all(b"GET /bytes/2 HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    assert!(send_signal(server.pid(), 15));
    std::thread::sleep(Duration::from_millis(200));
    slow.write_all(b"\r\n").unwrap();
    let r = read_response(&mut slow, false).unwrap();
    assert_eq!((r.status, r.header("connection")), (200, Some("close")));
    for (i, s) in queued.iter_mut().enumerate() {
        let r = read_response(s, false).unwrap_or_else(|e| panic!("queued {i}: {e}"));
        assert_eq!((r.status, &r.body[..]), (200, &b"ab"[..]), "queued {i}");
        assert_eq!(r.header("connection"), Some("close"));
    }
    assert_eq!(server.terminate(), Some(0));
}

/// Regression: a prefork worker forked just after SIGTERM reached the
/// parent cleared the inherited signal flag, so it could miss the SIGTERM
/// the parent then sent it; the parent waited out the whole grace period
/// (about one start in three). Every model must stop promptly when told
/// to stop while it is starting.
fn regression_sigterm_during_startup_waited_out_the_grace_period(model: &str) {
    let rounds = if model == "prefork" { 12 } else { 2 };
    for round in 0..rounds {
        let mut server = TestServer::start(model, &["--workers", "8", "--shutdown-grace", "20s"]);
        let start = Instant::now();
        assert_eq!(server.terminate(), Some(0), "{model} round {round}");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{model} round {round}: took {:?} to stop with nothing in flight",
            start.elapsed()
        );
    }
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
