//! The drive loop every model follows: send, process, receive in
//! `Session::next`'s order. Models supply the socket calls and what a pause
//! means; this owns the order, the turn's bounds and the buffer lending.

use std::io;
use std::time::Instant;

use super::outq::{OutQueue, Wrote, WRITE_BUDGET};
use super::session::{Next, Session};
use crate::http::Warm;

/// Reads served for one connection per turn before others get theirs; a
/// connection cut short is driven again on the next round.
pub const READS_PER_TURN: usize = 16;
/// A worker's shared read buffer for connections between requests.
pub const SCRATCH: usize = 64 * 1024;

/// A connection's socket as the drive loop uses it.
pub trait Socket {
    /// Writes queued output, at most `budget` bytes.
    fn send(&mut self, out: &mut OutQueue, budget: u64) -> io::Result<Wrote>;
    /// One read; WouldBlock when nothing has arrived.
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    /// False when the model knows that nothing has arrived: the drive then
    /// pauses without the read that would say so.
    fn may_recv(&self) -> bool {
        true
    }
}

/// Why a drive stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pause {
    /// The socket has nothing more to read.
    Readable,
    /// The socket takes no more output.
    Writable,
    /// Nothing to do until a task's result, a deadline or shutdown.
    Wait,
    /// The handlers left a task (`Session::take_task`) for the model to run.
    Task,
    /// The turn is over (read or write budget) while the socket could go
    /// on: other connections get theirs first, this one comes next round.
    Turn,
    /// The exchange is over: close, with the linger if `should_linger`.
    Close,
}

/// Read and parse buffers (`Warm`) a worker lends the connection it serves
/// between requests, so an idle one holds none and requests land in cache.
pub struct Lent {
    scratch: Vec<u8>,
    warm: Warm,
}

impl Lent {
    /// Nothing to lend: the connection reads into its own buffers (a
    /// thread that serves one connection).
    pub fn none() -> Lent {
        Lent {
            scratch: Vec::new(),
            warm: Warm::default(),
        }
    }
}

impl Default for Lent {
    fn default() -> Lent {
        Lent {
            scratch: vec![0; SCRATCH],
            warm: Warm::default(),
        }
    }
}

/// Serves `bytes`, received between requests, in the lent buffers; the
/// connection keeps only what its request left.
fn lend(
    warm: &mut Warm,
    s: &mut Session,
    bytes: &[u8],
    now: Instant,
    process: &mut impl FnMut(&mut Session),
) {
    s.conn.swap_warm(warm);
    s.conn.feed(bytes);
    s.on_read(now, bytes.len());
    process(s);
    s.conn.swap_warm(warm);
}

/// Moves a connection along as far as its socket and its turn allow.
/// `process` decodes and answers what the session holds (and may take the
/// task the handlers left, else the drive stops with `Pause::Task`).
pub fn drive(
    s: &mut Session,
    sock: &mut impl Socket,
    lent: &mut Lent,
    now: Instant,
    stopping: bool,
    process: &mut impl FnMut(&mut Session),
) -> Pause {
    let mut reads = 0;
    loop {
        match s.next(stopping) {
            Next::Send => {
                let wrote = sock.send(&mut s.out, WRITE_BUDGET);
                if wrote.is_ok() {
                    s.on_write(now);
                }
                match wrote {
                    // Drained: pipelined requests may be waiting.
                    Ok(Wrote::All) => process(s),
                    Ok(Wrote::Blocked) => return Pause::Writable,
                    // A fast reader takes turns like everyone else.
                    Ok(Wrote::Budget) => return Pause::Turn,
                    Err(_) => return Pause::Close,
                }
                if s.has_task() {
                    return Pause::Task;
                }
                continue;
            }
            Next::Close => return Pause::Close,
            Next::Wait => return Pause::Wait,
            Next::Recv if !sock.may_recv() => return Pause::Readable,
            Next::Recv => {}
        }
        if reads == READS_PER_TURN {
            return Pause::Turn;
        }
        reads += 1;
        let lend_it = s.conn.is_between_requests() && !lent.scratch.is_empty();
        let buf = if lend_it {
            &mut lent.scratch[..]
        } else {
            s.conn.read_buf()
        };
        if buf.is_empty() {
            return Pause::Wait;
        }
        match sock.recv(buf) {
            Ok(0) => {
                s.conn.feed_eof();
                process(s);
            }
            Ok(n) if lend_it => lend(&mut lent.warm, s, &lent.scratch[..n], now, process),
            Ok(n) => {
                s.conn.filled(n);
                s.on_read(now, n);
                process(s);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Pause::Readable,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Pause::Close,
        }
        if s.has_task() {
            return Pause::Task;
        }
    }
}

#[cfg(test)]
mod tests;
