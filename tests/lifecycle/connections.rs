//! Holding many connections: running out of descriptors neither kills nor
//! spins the server, --max-connections queues the rest, and a silent client
//! waits in the kernel (TCP_DEFER_ACCEPT).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

use super::support::{good_request, WAIT};

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

pub fn running_out_of_descriptors_neither_kills_nor_spins(model: &str) {
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

#[test]
fn max_connections_queues_the_rest_async() {
    max_connections_queues_the_rest("async", &["--workers", "1"]);
}

#[test]
fn max_connections_queues_the_rest_async_local() {
    max_connections_queues_the_rest("async-local", &["--workers", "1"]);
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
