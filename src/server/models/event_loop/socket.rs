//! One client connection of an epoll reactor: its socket and session, and
//! driving it (reads into the reactor's shared buffer, writes within a
//! budget, jobs handed to the offload pool with the way back to the
//! reactor's inbox). The reactor (`super`) decides when.

use std::io::{self, Read};

use mio::net::TcpStream;
use mio::Waker;
use slab::Slab;

use crate::server::models::loop_ctx::{self, Wake, READS_PER_TURN};
use crate::server::outq::{Wrote, WRITE_BUDGET};
use crate::server::session::Session;

/// The reactor's wake-up when a task's result is in its inbox.
impl Wake for Waker {
    fn wake(&self) {
        // Best effort: a reactor that has gone needs no waking.
        let _ = Waker::wake(self);
    }
}

/// What driving a connection needs besides the connection itself.
pub(super) type Ctx<'a> = loop_ctx::Ctx<'a, Waker>;

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
/// between requests reads into the reactor's `scratch` and is served in
/// its warm buffers, so an idle one holds no buffers. A
/// connection whose request left a job waits (no read, nothing to write)
/// until `take_done` brings the response back.
pub(super) fn drive(c: &mut ClientSocket, token: usize, ctx: &Ctx, scratch: &mut [u8]) -> Drive {
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
            ctx.process(&mut c.session, token, c.gen);
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
            &mut *scratch
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
                    ctx.serve_lent(&mut c.session, &scratch[..n], token, c.gen);
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
        ctx.process(&mut c.session, token, c.gen);
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
