//! One client connection of an epoll reactor: its socket and session, and
//! driving it (reads into the reactor's shared buffer, writes within a
//! budget, jobs handed to the offload pool with the way back to the
//! reactor's inbox). The reactor (`super`) decides when.

use std::io::{self, Read};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;

use mio::net::TcpStream;
use mio::Waker;
use slab::Slab;

use crate::http::Warm;
use crate::server::handlers::App;
use crate::server::offload::Offload;
use crate::server::outq::{Wrote, WRITE_BUDGET};
use crate::server::session::Session;
use crate::server::task::TaskDone;

/// Reads served for one connection per wake-up before others get a turn;
/// a connection cut short is revisited on the next round.
pub(in crate::server::models) const READS_PER_TURN: usize = 16;
/// The reactor's shared read buffer for connections between requests.
pub(in crate::server::models) const SCRATCH: usize = 64 * 1024;

/// A finished task's result on its way back to a reactor: slab token,
/// connection generation (which tells a connection from a later one that
/// reuses its token after it closed), result.
pub(super) type Done = (usize, u64, TaskDone);

/// How finished tasks reach a reactor. A channel, not a mutex: the offload
/// threads run at a lower priority, and one preempted while holding a
/// lock the loop needs would stall the loop until it gets the CPU back.
pub(super) struct Inbox {
    pub(super) tx: Sender<Done>,
    pub(super) waker: Waker,
}

impl Inbox {
    fn deliver(&self, done: Done) {
        // Both best effort: a reactor that has gone needs neither.
        let _ = self.tx.send(done);
        let _ = self.waker.wake();
    }
}

/// What driving a connection needs besides the connection itself.
pub(super) struct Ctx<'a> {
    app: &'a App,
    offload: &'a Offload,
    inbox: &'a Arc<Inbox>,
    stopping: bool,
    /// The round's clock, read once after epoll_wait (nginx's cached
    /// time): reads and writes are timed with it instead of a clock read
    /// each, which cost two clock_gettime per request, about 2 % of the
    /// loop's CPU at c=50 (perf). It runs late by at most the round's own
    /// length, which READS_PER_TURN and WRITE_BUDGET bound per connection;
    /// the deadlines it feeds are seconds long.
    now: Instant,
}

impl<'a> Ctx<'a> {
    /// Takes the reactor's fields one by one rather than the reactor, so
    /// that its connections stay free to borrow mutably beside it.
    pub(super) fn new(
        app: &'a App,
        offload: &'a Offload,
        inbox: &'a Arc<Inbox>,
        stopping: bool,
        now: Instant,
    ) -> Self {
        Ctx {
            app,
            offload,
            inbox,
            stopping,
            now,
        }
    }
}

/// A client's non-blocking socket, the session it carries, and what epoll
/// last said about it.
pub(super) struct ClientSocket {
    pub(super) stream: TcpStream,
    pub(super) session: Session,
    /// The socket may hold unread bytes. Cleared when a read comes back
    /// short (the receive queue was drained), set by a readable event:
    /// with edge triggering, bytes arriving later raise a new edge, so the
    /// read that would only return WouldBlock is skipped (one syscall per
    /// request fewer), and so is the read on a writable-only wake-up.
    pub(super) readable: bool,
    /// The peer's FIN was reported: a short read does not mean drained,
    /// the EOF is still to be read and no further edge will announce it.
    pub(super) read_closed: bool,
    /// Which connection this is among all that held its slab token.
    pub(super) gen: u64,
}

/// What a reactor lends the connection it drives: a read buffer for
/// connections between requests, and buffers to copy and parse a request
/// in while the cache holds them.
pub(super) struct Scratch {
    pub(super) bytes: Vec<u8>,
    pub(super) warm: Warm,
}

/// What driving a connection left it needing.
#[derive(PartialEq, Eq)]
pub(super) enum Drive {
    /// Waiting for the socket (readable or writable edge).
    Wait,
    /// Cut short for fairness; drive again next round.
    Again,
    Close,
}

/// Moves a connection along as far as its socket allows. A connection
/// between requests reads into `scratch`, so an idle one holds only a
/// buffer the size of its last request, not a whole read buffer. A
/// connection whose request left a job waits (no read, nothing to write)
/// until `take_done` brings the response back.
pub(super) fn drive(c: &mut ClientSocket, token: usize, ctx: &Ctx, scratch: &mut Scratch) -> Drive {
    let mut reads = 0;
    loop {
        if !c.session.out.is_empty() {
            match c.session.out.write_to(&mut c.stream, WRITE_BUDGET) {
                Ok(Wrote::All) => c.session.on_write(ctx.now),
                Ok(Wrote::Blocked) => return Drive::Wait,
                // A fast reader of a large response takes its turn like
                // everyone else; the socket still takes more, so no edge
                // will come: revisited next round.
                Ok(Wrote::Budget) => return Drive::Again,
                Err(_) => return Drive::Close,
            }
            // Output drained: pipelined requests may be waiting.
            process(c, token, ctx);
            if !c.session.out.is_empty() {
                continue;
            }
        }
        if c.session.is_done() {
            return Drive::Close;
        }
        if ctx.stopping {
            c.session.close_after_response();
        }
        if !c.session.conn.wants_read() || !c.readable {
            return Drive::Wait;
        }
        if reads == READS_PER_TURN {
            return Drive::Again;
        }
        reads += 1;
        let shared = c.session.conn.is_between_requests();
        let buf = if shared {
            &mut scratch.bytes[..]
        } else {
            c.session.conn.read_buf()
        };
        if buf.is_empty() {
            return Drive::Wait;
        }
        let room = buf.len();
        match c.stream.read(buf) {
            Ok(0) => c.session.conn.feed_eof(),
            Ok(n) => {
                c.readable = n == room || c.read_closed;
                if shared {
                    // The reactor's warm buffers, for this request only
                    // (see `Warm`).
                    c.session.conn.swap_warm(&mut scratch.warm);
                    c.session.conn.feed(&scratch.bytes[..n]);
                    c.session.on_read(ctx.now, n);
                    process(c, token, ctx);
                    c.session.conn.swap_warm(&mut scratch.warm);
                    continue;
                }
                c.session.conn.filled(n);
                c.session.on_read(ctx.now, n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                c.readable = false;
                return Drive::Wait;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Drive::Close,
        }
        process(c, token, ctx);
    }
}

/// Decodes and answers what the connection has received; blocking work
/// the handlers left goes to the offload pool, its result to the inbox.
pub(super) fn process(c: &mut ClientSocket, token: usize, ctx: &Ctx) {
    c.session.process(ctx.app);
    if let Some(task) = c.session.take_task() {
        let (inbox, gen) = (Arc::clone(ctx.inbox), c.gen);
        ctx.offload.submit(
            task,
            Box::new(move |result| inbox.deliver((token, gen, result))),
        );
    }
}

pub(super) fn close(conns: &mut Slab<ClientSocket>, token: usize) {
    if let Some(mut c) = conns.try_remove(token) {
        // No deregister: closing the socket removes it from the epoll set
        // (it is never duplicated), and that saves an epoll_ctl per
        // connection, which shows when every request has its own.
        if c.session.conn.should_linger() {
            // Best effort on a non-blocking socket: take what has already
            // arrived so close does not turn into RST over the response.
            let _ = c.stream.shutdown(std::net::Shutdown::Write);
            let mut buf = [0u8; 4096];
            while matches!(c.stream.read(&mut buf), Ok(n) if n > 0) {}
        }
    }
}
