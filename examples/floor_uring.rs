//! The io_uring floor for server cost: a minimal io_uring responder for
//! the performance comparison (scripts/perf/), as examples/floor_server.rs
//! is for epoll. No parsing beyond finding the blank line that ends each
//! request, the same fixed 500-byte response every time. It sets up its
//! ring exactly as loadlab's `io-uring` model does (the same builder and
//! buffer ring: single issuer, deferred task running, multishot accept,
//! multishot receive into provided buffers, every send of a round in one
//! io_uring_enter, and a round of nothing but keep-alive sends waiting for
//! the next event rather than their completions), so the two differ in the
//! serving code alone.
//!
//! Usage: floor_uring PORT [close] [WORKERS]
//!   close:   one request per connection
//!   WORKERS: that many threads, each with its own ring and SO_REUSEPORT
//!            listener (as loadlab's `io-uring`); default 1

use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};

use io_uring::{cqueue, opcode, squeue, types};
use loadlab::server::models::io_uring::{build_ring, BufRing, BUF_GROUP};

/// Top byte of user_data: what completed; the low bits: the slab key.
const ACCEPT: u64 = 1 << 56;
const RECV: u64 = 2 << 56;
const SEND: u64 = 3 << 56;
const KEY: u64 = (1 << 56) - 1;

#[path = "floor/args.rs"]
mod args;

fn main() {
    args::run("floor_uring", serve);
}

/// A connection: its socket, how much of "\r\n\r\n" its input last ended
/// with, responses owed, the bytes of the send in flight and how far it got.
struct Conn {
    sock: TcpStream,
    tail: u8,
    owed: usize,
    out: Vec<u8>,
    pos: usize,
    sending: bool,
    /// The multishot receive is armed: the socket stays until it ends.
    armed: bool,
    eof: bool,
}

impl Conn {
    /// Finished, and the kernel holds no operation on it.
    fn gone(&self) -> bool {
        self.eof && !self.sending && !self.armed
    }

    /// Ends the connection: the shutdown ends its receive, which frees it.
    fn end(&mut self) {
        self.eof = true;
        // SAFETY: shutdown takes no pointers; the socket is open.
        unsafe { libc::shutdown(self.sock.as_raw_fd(), libc::SHUT_RDWR) };
    }
}

fn serve(listener: TcpListener, response: &'static [u8], close: bool) {
    let (mut ring, _) = build_ring().expect("io_uring");
    let mut bufs = BufRing::register(&ring).expect("buffer ring");
    let mut conns: slab::Slab<Conn> = slab::Slab::new();
    let mut sqes: Vec<squeue::Entry> = vec![accept(&listener)];
    let mut cqes: Vec<(u64, i32, u32)> = Vec::new();
    loop {
        let want = wait_for(&sqes, &conns, close);
        for e in sqes.drain(..) {
            // SAFETY: entries point only at connections' `out`, untouched
            // while their send is in flight, and at the buffer ring.
            while unsafe { ring.submission().push(&e) }.is_err() {
                ring.submit().expect("submit");
            }
        }
        // A signal (a profiler's, say) interrupts the wait: reap and go on.
        match ring.submit_and_wait(want) {
            Err(e) if e.kind() != std::io::ErrorKind::Interrupted => panic!("io_uring_enter: {e}"),
            _ => {}
        }
        cqes.extend(
            ring.completion()
                .map(|c| (c.user_data(), c.result(), c.flags())),
        );
        for (ud, res, flags) in cqes.drain(..) {
            let key = (ud & KEY) as usize;
            match ud & !KEY {
                ACCEPT => {
                    if !cqueue::more(flags) {
                        sqes.push(accept(&listener));
                    }
                    if res >= 0 {
                        // SAFETY: a new descriptor from accept, owned by nothing else.
                        let sock = unsafe { TcpStream::from_raw_fd(res) };
                        let fd = sock.as_raw_fd();
                        let k = conns.insert(Conn {
                            sock,
                            tail: 0,
                            owed: 0,
                            out: Vec::new(),
                            pos: 0,
                            sending: false,
                            armed: true,
                            eof: false,
                        });
                        sqes.push(recv(fd, k));
                    }
                }
                RECV => {
                    let bid = cqueue::buffer_select(flags);
                    if let Some(c) = conns.get_mut(key) {
                        match bid {
                            Some(b) if res > 0 => count(c, bufs.get(b, res as usize)),
                            _ if res == -libc::ENOBUFS => {}
                            _ => c.end(),
                        }
                        c.armed = cqueue::more(flags);
                        if !c.armed && !c.eof {
                            sqes.push(recv(c.sock.as_raw_fd(), key));
                            c.armed = true;
                        }
                        send_owed(c, key, response, close, &mut sqes);
                        if c.gone() {
                            conns.remove(key);
                        }
                    }
                    if let Some(b) = bid {
                        bufs.give(b);
                    }
                }
                _ => {
                    let Some(c) = conns.get_mut(key) else {
                        continue;
                    };
                    c.sending = false;
                    if res <= 0 {
                        c.end();
                    } else {
                        c.pos += res as usize;
                    }
                    if !c.eof && c.pos < c.out.len() {
                        sqes.push(send(c, key, close));
                    } else if close && !c.eof {
                        c.end(); // one request per connection
                    } else {
                        send_owed(c, key, response, close, &mut sqes);
                    }
                    if c.gone() {
                        conns.remove(key);
                    }
                }
            }
        }
        bufs.publish();
    }
}

/// Completions to wait for: two when the round queued keep-alive sends
/// and nothing else, to connections owed no further response, as
/// loadlab's `io-uring` does with its quiet sends. A send to a socket with
/// room completes inside the io_uring_enter that submits it; waiting for
/// one completion would return at once with it, and the next round would
/// enter again to wait for the next request: two syscalls a request where
/// one does. Its completion needs nothing done promptly (MSG_WAITALL: it
/// is all sent, or failed), so it waits for the next event. (The floor
/// has no timers: an event that comes while a send is held up by a peer
/// that does not read waits for one more. The benchmarks' peers read.)
fn wait_for(sqes: &[squeue::Entry], conns: &slab::Slab<Conn>, close: bool) -> usize {
    let quiet = |e: &squeue::Entry| {
        let ud = e.get_user_data();
        ud & !KEY == SEND
            && conns
                .get((ud & KEY) as usize)
                .is_some_and(|c| c.owed == 0 && !c.eof)
    };
    match !close && !sqes.is_empty() && sqes.iter().all(quiet) {
        true => 2,
        false => 1,
    }
}

/// Counts the requests whose blank line is in `data`.
fn count(c: &mut Conn, data: &[u8]) {
    let mut state = c.tail;
    for &b in data {
        state = match (state, b) {
            (0 | 2, b'\r') => state + 1,
            (3, b'\n') => {
                c.owed += 1;
                0
            }
            (1, b'\n') => 2,
            (_, b'\r') => 1,
            _ => 0,
        };
    }
    c.tail = state;
}

/// Sends every response owed in one send, unless one is in flight.
fn send_owed(
    c: &mut Conn,
    key: usize,
    response: &[u8],
    close: bool,
    sqes: &mut Vec<squeue::Entry>,
) {
    if c.sending || c.owed == 0 || c.eof {
        return;
    }
    c.out.clear();
    c.pos = 0;
    for _ in 0..if close { 1 } else { c.owed } {
        c.out.extend_from_slice(response);
    }
    c.owed = 0;
    sqes.push(send(c, key, close));
}

fn send(c: &mut Conn, key: usize, close: bool) -> squeue::Entry {
    c.sending = true;
    let rest = &c.out[c.pos..];
    // In close mode the FIN follows in the same segment, as in the epoll
    // floor; in keep-alive mode the send is quiet (see `wait_for`).
    let more = if close {
        libc::MSG_MORE
    } else {
        libc::MSG_WAITALL
    };
    opcode::Send::new(
        types::Fd(c.sock.as_raw_fd()),
        rest.as_ptr(),
        rest.len() as u32,
    )
    .flags(libc::MSG_NOSIGNAL | more)
    .build()
    .user_data(SEND | key as u64)
}

fn accept(l: &TcpListener) -> squeue::Entry {
    opcode::AcceptMulti::new(types::Fd(l.as_raw_fd()))
        .flags(libc::SOCK_CLOEXEC)
        .build()
        .user_data(ACCEPT)
}

fn recv(fd: i32, key: usize) -> squeue::Entry {
    opcode::RecvMulti::new(types::Fd(fd), BUF_GROUP)
        .build()
        .user_data(RECV | key as u64)
}
