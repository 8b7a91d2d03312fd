//! The floor for server cost: a minimal epoll responder written for the
//! performance comparison (scripts/perf/). One thread, edge-triggered, no
//! parsing beyond finding the blank line that ends each request, the same
//! fixed 500-byte response every time. What it spends per request is
//! roughly the kernel's share, which no server can avoid.
//!
//! Usage: floor_server PORT [close]   ("close": one request per connection)

use std::io::{Read, Write};
use std::net::SocketAddr;

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

const LISTENER: Token = Token(usize::MAX);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args.get(1).and_then(|p| p.parse().ok()).unwrap_or_else(|| {
        eprintln!("usage: floor_server PORT [close]");
        std::process::exit(2)
    });
    let close = args.get(2).is_some_and(|a| a == "close");
    let mut response =
        b"HTTP/1.1 200 OK\r\nServer: floor\r\nContent-Type: text/html\r\nContent-Length: 500\r\n"
            .to_vec();
    if close {
        response.extend_from_slice(b"Connection: close\r\n");
    }
    response.extend_from_slice(b"\r\n");
    response.extend_from_slice(&[b'x'; 500]);

    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    // The listener loadlab's models use (backlog, TCP_NODELAY inherited,
    // TCP_DEFER_ACCEPT), so that the floor differs from them in the
    // serving code alone.
    let std_listener = loadlab::server::bind(addr, false, true).expect("bind");
    std_listener
        .set_nonblocking(true)
        .expect("non-blocking listener");
    let mut listener = TcpListener::from_std(std_listener);
    let mut poll = Poll::new().unwrap();
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)
        .unwrap();
    println!("listening on http://{}", listener.local_addr().unwrap());
    let mut conns: slab::Slab<(TcpStream, u8)> = slab::Slab::new();
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::with_capacity(64 * 1024);
    loop {
        poll.poll(&mut events, None).unwrap();
        for ev in events.iter() {
            if ev.token() == LISTENER {
                while let Ok((mut s, _)) = listener.accept() {
                    let e = conns.vacant_entry();
                    poll.registry()
                        .register(&mut s, Token(e.key()), Interest::READABLE)
                        .unwrap();
                    e.insert((s, 0));
                }
                continue;
            }
            let key = ev.token().0;
            let Some((s, tail)) = conns.get_mut(key) else {
                continue;
            };
            let mut done = false;
            loop {
                match s.read(&mut buf) {
                    Ok(0) => {
                        done = true;
                        break;
                    }
                    Ok(n) => {
                        // Count blank lines, carrying how much of "\r\n\r\n"
                        // the previous read ended with.
                        out.clear();
                        let mut state = *tail;
                        for &b in &buf[..n] {
                            state = match (state, b) {
                                (0 | 2, b'\r') => state + 1,
                                (1 | 3, b'\n') if state == 3 => {
                                    out.extend_from_slice(&response);
                                    0
                                }
                                (1, b'\n') => 2,
                                (_, b'\r') => 1,
                                _ => 0,
                            };
                        }
                        *tail = state;
                        if !out.is_empty() && s.write_all(&out).is_err() {
                            done = true;
                            break;
                        }
                        if close && !out.is_empty() {
                            done = true;
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        done = true;
                        break;
                    }
                }
            }
            if done {
                let (mut s, _) = conns.remove(key);
                let _ = poll.registry().deregister(&mut s);
            }
        }
    }
}
