//! A fast reader of a large response must not keep a worker to itself: the
//! event-driven models with one thread (one event loop, or an async
//! runtime with one worker)
//! wrote a response until the socket was full, so while a client took a
//! large response as fast as it could, every other connection on that thread
//! waited. A per-turn byte budget (`outq::WRITE_BUDGET`) hands the thread
//! round.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{assert_alive, loadlab_bin, TestServer};

/// Size of the response downloaded beside the small requests, the largest
/// `/bytes/N` answers. Written from memory, it costs the server a copy per
/// byte, as reading it costs the downloader, plus the loopback's receive
/// work: the downloader keeps up, and a server that writes until the
/// socket is full writes for the whole download. (A sparse file's
/// sendfile costs the server so little that the socket fills often.)
const BIG: u64 = 64 << 20;
/// Where it is.
const BIG_PATH: &str = "/bytes/67108864";
/// The small client: one keep-alive connection, open loop (latency counted
/// from each request's intended send time, so a stall shows in every
/// request it delays, not just one).
const SMALL: [&str; 10] = [
    "-k",
    "-c",
    "1",
    "--threads",
    "1",
    "--rate",
    "100",
    "-t",
    "3",
    "-q",
];
/// What the download may add to the small client's p99, beyond twice its
/// p99 beside the same downloads from another server (which measures what
/// they take from a shared host): its worker then has CPU work of its own
/// to be scheduled for, but a worker held for whole downloads adds
/// hundreds of ms.
const SLACK_MS: f64 = 50.0;

/// The models take turns: two downloads at once on a 2-core host would
/// measure the host.
static TURN: Mutex<()> = Mutex::new(());

/// `loadlab bench SMALL --format json URL`: the report.
fn small_client(url: &str) -> serde_json::Value {
    let out = Command::new(loadlab_bin())
        .arg("bench")
        .args(SMALL)
        .args(["--format", "json"])
        .arg(url)
        .output()
        .expect("run bench");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "bench printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn latency(r: &serde_json::Value, q: &str) -> f64 {
    r["latency_ms"][q].as_f64().unwrap()
}

/// The downloader's receive buffer: far more than the socket would grow
/// to by itself, so the server's writes do not find the socket full while
/// the downloader waits for a CPU on a busy host; the server can then keep
/// writing for a whole download unless it takes turns. Set with
/// SO_RCVBUFFORCE where the test may (root); else the kernel's own tuning.
const DOWNLOAD_RCVBUF: libc::c_int = 256 << 20;
/// Downloads at once: while one waits for a CPU, the other keeps the
/// server writing.
const DOWNLOADERS: usize = 2;
/// The downloader's read size.
const DOWNLOAD_READ: usize = 4 << 20;

/// Downloads `path` from `addr` as fast as it can read, one download after
/// another, until `stop`; returns the seconds each finished download took.
fn download_until(addr: SocketAddr, path: &str, stop: Arc<AtomicBool>) -> Vec<f64> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let mut buf = vec![0u8; DOWNLOAD_READ];
    let mut done = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        // SAFETY: setsockopt reads a c_int that lives across the call.
        unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(&sock),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                (&DOWNLOAD_RCVBUF as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        sock.connect(&addr.into()).expect("connect");
        let mut s: TcpStream = sock.into();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut got = 0u64;
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got += n as u64,
                Err(e) => panic!("download failed after {got} bytes: {e}"),
            }
        }
        assert!(got > BIG, "a download came back short: {got} bytes");
        done.push(t.elapsed().as_secs_f64());
    }
    done
}

/// The small client's report while `DOWNLOADERS` clients download the big
/// response from `from`, and the seconds each download took.
fn beside_downloads(small: &str, from: SocketAddr) -> (serde_json::Value, Vec<f64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let downloaders: Vec<_> = (0..DOWNLOADERS)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || download_until(from, BIG_PATH, stop))
        })
        .collect();
    // The downloads under way before the small client starts.
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    let report = small_client(small);
    let took = t.elapsed();
    stop.store(true, Ordering::Relaxed);
    let downloads: Vec<f64> = downloaders
        .into_iter()
        .flat_map(|d| d.join().expect("downloader"))
        .collect();
    assert_eq!(report["failed"], 0, "{report}");
    // The downloads ran through the small client's run, not just beside
    // its start.
    let busy = downloads.iter().sum::<f64>() / DOWNLOADERS as f64;
    assert!(
        busy >= took.as_secs_f64() * 0.8,
        "downloads took {busy:.2} s of the {took:?} run"
    );
    (report, downloads)
}

fn a_fast_download_does_not_hold_the_worker(model: &str) {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let args = ["--workers", "1"];
    let server = TestServer::start(model, &args);
    let other = TestServer::start(model, &args);
    let small = server.url("/500B.html");
    // The baseline: the same downloads load the host, from another server.
    let (alone, _) = beside_downloads(&small, other.addr);
    let (beside, downloads) = beside_downloads(&small, server.addr);
    let mut mb_s: Vec<f64> = downloads
        .iter()
        .map(|s| BIG as f64 / s.max(1e-9) / 1e6)
        .collect();
    mb_s.sort_by(f64::total_cmp);
    eprintln!(
        "{model}: small client p99 {:.2} ms max {:.2} ms beside downloads from another \
         server, p99 {:.2} ms max {:.2} ms beside {} downloads of 64 MiB from its own \
         (median {:.0} MB/s)",
        latency(&alone, "p99"),
        latency(&alone, "max"),
        latency(&beside, "p99"),
        latency(&beside, "max"),
        downloads.len(),
        mb_s[mb_s.len() / 2]
    );
    let bound = 2.0 * latency(&alone, "p99") + SLACK_MS;
    assert!(
        latency(&beside, "p99") <= bound,
        "{model}: p99 {:.2} ms beside a fast download, bound {bound:.2} ms",
        latency(&beside, "p99")
    );
    assert_alive(&server);
}

#[test]
fn a_fast_download_does_not_hold_the_event_loop() {
    a_fast_download_does_not_hold_the_worker("event-loop");
}

#[test]
fn a_fast_download_does_not_hold_an_async_worker() {
    a_fast_download_does_not_hold_the_worker("async");
}
