//! The floor for client cost: a minimal keep-alive HTTP client, written for
//! the load-generator comparison (scripts/bench-vs-wrk.sh). One epoll loop,
//! one write and one read per request, no parsing beyond counting bytes: the
//! CPU it spends per request is roughly the kernel's share, which no client
//! can avoid.
//!
//! Usage: floor_client HOST:PORT PATH CONNECTIONS SECONDS

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream as StdStream};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: floor_client HOST:PORT PATH CONNECTIONS SECONDS");
        std::process::exit(2);
    }
    let addr: SocketAddr = args[1].parse().expect("HOST:PORT");
    let request = format!("GET {} HTTP/1.1\r\nHost: {}\r\n\r\n", args[2], args[1]).into_bytes();
    let conns: usize = args[3].parse().expect("CONNECTIONS");
    let secs: f64 = args[4].parse().expect("SECONDS");
    let size = probe(addr, &request);

    let mut poll = Poll::new().unwrap();
    let mut socks = Vec::with_capacity(conns);
    let mut got = vec![0usize; conns];
    for i in 0..conns {
        let mut s = TcpStream::from_std(StdStream::connect(addr).expect("connect"));
        s.set_nodelay(true).unwrap();
        poll.registry()
            .register(&mut s, Token(i), Interest::READABLE)
            .unwrap();
        s.write_all(&request).unwrap();
        socks.push(s);
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut events = Events::with_capacity(1024);
    let mut done: u64 = 0;
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        poll.poll(&mut events, Some(Duration::from_millis(100)))
            .unwrap();
        for ev in events.iter() {
            let i = ev.token().0;
            loop {
                match socks[i].read(&mut buf) {
                    Ok(0) => panic!("server closed a keep-alive connection"),
                    Ok(n) => {
                        got[i] += n;
                        if got[i] >= size {
                            got[i] -= size;
                            done += 1;
                            socks[i].write_all(&request).unwrap();
                            // The next response raises a new edge; reading on
                            // here could ping-pong with a fast server forever.
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("read: {e}"),
                }
            }
        }
    }
    let t = start.elapsed().as_secs_f64();
    println!("requests {done} seconds {t:.3} rps {:.0}", done as f64 / t);
}

/// One blocking request to learn how many bytes a response takes.
fn probe(addr: SocketAddr, request: &[u8]) -> usize {
    let mut s = StdStream::connect(addr).expect("connect");
    s.write_all(request).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "server closed during probe");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(h) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..h]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .expect("probe response has Content-Length")
                .trim()
                .parse()
                .unwrap();
            if buf.len() >= h + 4 + len {
                return h + 4 + len;
            }
        }
    }
}
