//! The floor for server cost: a minimal epoll responder written for the
//! performance comparison (scripts/perf/). Edge-triggered, no parsing
//! beyond finding the blank line that ends each request, the same fixed
//! 500-byte response every time. What it spends per request is roughly the
//! kernel's share, which no server can avoid.
//!
//! Usage: floor_server PORT [close] [WORKERS]
//!   close:   one request per connection
//!   WORKERS: that many threads, each with its own SO_REUSEPORT listener
//!            and loop (as loadlab's `reactors`); default 1
//!
//! It takes every kernel-level shortcut loadlab's reactors take, so that
//! the floor differs from them in the serving code alone: the same listener
//! (backlog, TCP_NODELAY inherited, TCP_DEFER_ACCEPT), a new connection
//! answered before it is registered with epoll (with deferred accept its
//! request is usually there already), the FIN of a closing connection sent
//! in the response's segment (MSG_MORE, then close), no epoll_ctl on close.

use std::io::{Read, Write};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

const LISTENER: Token = Token(usize::MAX);

#[path = "floor/args.rs"]
mod args;

fn main() {
    args::run("floor_server", serve);
}

/// A connection: its socket and how much of "\r\n\r\n" its last read
/// ended with.
type Conn = (TcpStream, u8);

fn serve(listener: std::net::TcpListener, response: &'static [u8], close: bool) {
    listener
        .set_nonblocking(true)
        .expect("non-blocking listener");
    let mut listener = TcpListener::from_std(listener);
    let mut poll = Poll::new().unwrap();
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)
        .unwrap();
    let mut conns: slab::Slab<Conn> = slab::Slab::new();
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::with_capacity(64 * 1024);
    loop {
        // A signal (a profiler's, say) interrupts the wait: go on.
        match poll.poll(&mut events, None) {
            Err(e) if e.kind() != std::io::ErrorKind::Interrupted => panic!("epoll_wait: {e}"),
            _ => {}
        }
        for ev in events.iter() {
            if ev.token() == LISTENER {
                while let Ok((s, _)) = listener.accept() {
                    let mut conn = (s, 0);
                    if answer(&mut conn, &mut buf, &mut out, response, close) {
                        continue;
                    }
                    let e = conns.vacant_entry();
                    poll.registry()
                        .register(&mut conn.0, Token(e.key()), Interest::READABLE)
                        .unwrap();
                    e.insert(conn);
                }
                continue;
            }
            let key = ev.token().0;
            let Some(conn) = conns.get_mut(key) else {
                continue;
            };
            if answer(conn, &mut buf, &mut out, response, close) {
                // Closing the socket removes it from epoll.
                conns.remove(key);
            }
        }
    }
}

/// Reads until WouldBlock and answers every complete request; true when
/// the connection is done (EOF, error, or answered in close mode).
fn answer(
    conn: &mut Conn,
    buf: &mut [u8],
    out: &mut Vec<u8>,
    response: &[u8],
    close: bool,
) -> bool {
    let (s, tail) = conn;
    loop {
        match s.read(buf) {
            Ok(0) => return true,
            Ok(n) => {
                // Count blank lines, carrying how much of "\r\n\r\n" the
                // previous read ended with.
                out.clear();
                let mut state = *tail;
                for &b in &buf[..n] {
                    state = match (state, b) {
                        (0 | 2, b'\r') => state + 1,
                        (1 | 3, b'\n') if state == 3 => {
                            out.extend_from_slice(response);
                            0
                        }
                        (1, b'\n') => 2,
                        (_, b'\r') => 1,
                        _ => 0,
                    };
                }
                *tail = state;
                if out.is_empty() {
                    continue;
                }
                if close {
                    // Held back until the close, which sends it with the FIN.
                    let sock = socket2::SockRef::from(&*s);
                    let _ = sock.send_with_flags(out, libc::MSG_MORE | libc::MSG_NOSIGNAL);
                    return true;
                }
                if s.write_all(out).is_err() {
                    return true;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}
