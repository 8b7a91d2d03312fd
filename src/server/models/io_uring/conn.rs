//! One io_uring connection: its socket and `Session`, input received but
//! not yet taken, its operations in flight, and the submission entries for
//! what it needs next.

use std::io;
use std::net::TcpStream;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

use io_uring::{opcode, squeue, types};

use super::ring::BUF_GROUP;
use super::{user_data, Op};
use crate::server::driver::{self, Pause, Socket};
use crate::server::linger::Linger;
use crate::server::loop_ctx::{self, Wake};
use crate::server::outq::{Front, OutQueue, Wrote};
use crate::server::session::Session;
use crate::server::task::TaskDone;

/// Received bytes a connection may hold beyond what its session takes;
/// past it the receive is cancelled, so TCP holds back a client that
/// pipelines without reading its responses.
pub const HELD_MAX: usize = 64 * 1024;
/// Most bytes one splice moves into the pipe: its default capacity, so
/// the splice never waits for the pipe.
const SPLICE_CHUNK: u32 = 64 * 1024;
/// Splices run on io-wq threads, and one waiting for a slow reader would
/// hold its thread; nonblocking, a full socket answers EAGAIN and the ring
/// waits for POLLOUT instead (`Sending::Writable`).
const SPLICE_FLAGS: u32 = libc::SPLICE_F_NONBLOCK;
/// Largest quiet send (`Conn::submit_output`): small responses, which a
/// socket with room takes whole; `Conn::quiet_max` may lower it.
const QUIET_MAX: usize = 16 * 1024;

/// A ring's wake-up when a task's result is in its inbox: an eventfd the
/// ring keeps a read on.
pub struct EventFd(pub OwnedFd);

impl Wake for EventFd {
    fn wake(&self) {
        let one = 1u64;
        // SAFETY: writes 8 bytes from a live u64 to an eventfd this waker
        // owns; a full counter still leaves it readable.
        unsafe { libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

/// What driving a connection needs besides the connection itself.
pub type Ctx<'a> = loop_ctx::Ctx<'a, EventFd>;

/// The connection's output operation in flight, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sending {
    Idle,
    Bytes,
    SpliceIn,
    SpliceOut,
    /// Waiting for POLLOUT after a splice found the socket full; the splice
    /// is submitted again after.
    Writable,
}

pub struct Conn {
    pub sock: TcpStream,
    pub session: Session,
    pub gen: u32,
    /// Received, not yet taken by the session.
    held: Vec<u8>,
    /// The peer's EOF was received (after `held`).
    eof: bool,
    /// A multishot receive is armed (its last completion not yet seen).
    recv_armed: bool,
    /// A cancel of the receive was asked for (too much held).
    recv_cancelled: bool,
    sending: Sending,
    /// A task's result that came while a send was in flight; applied when
    /// it completes, since the result may queue output.
    done: Option<TaskDone>,
    /// Pipe (read end, write end) that files are spliced through.
    pipe: Option<(OwnedFd, OwnedFd)>,
    /// Bytes in the pipe not yet spliced to the socket.
    in_pipe: u32,
    /// The last splice to the socket found it full: wait for POLLOUT
    /// before the next.
    socket_full: bool,
    /// Being closed: its socket is shut down and it is removed once its
    /// last operation completes (the kernel may still use its buffers).
    pub closing: bool,
    /// Closing after the response, reading (and dropping) what the peer
    /// still sends so the close does not reset the response (`linger`).
    pub linger: Option<Linger>,
    /// Queued for `drive` this round.
    pub touched: bool,
}

impl Conn {
    pub fn new(sock: TcpStream, session: Session, gen: u32) -> Conn {
        Conn {
            sock,
            session,
            gen,
            held: Vec::new(),
            eof: false,
            recv_armed: false,
            recv_cancelled: false,
            sending: Sending::Idle,
            done: None,
            pipe: None,
            in_pipe: 0,
            socket_full: false,
            closing: false,
            linger: None,
            touched: false,
        }
    }

    /// Operations of this connection still in flight.
    pub fn in_flight(&self) -> bool {
        self.recv_armed || self.sending != Sending::Idle
    }

    /// Nothing queued and nothing in the pipe: the response is out.
    fn flushed(&self) -> bool {
        self.session.out.is_empty() && self.in_pipe == 0
    }

    /// Idle between requests with nothing to send (closed when stopping).
    pub fn is_idle(&self) -> bool {
        self.session.is_idle() && self.in_pipe == 0
    }

    /// A multishot receive completion: `data` (None: the receive ended
    /// with `res`), and whether more completions follow.
    pub fn on_recv(&mut self, data: Option<&[u8]>, res: i32, more: bool, ctx: &Ctx, token: usize) {
        if !more {
            self.recv_armed = false;
        }
        match data {
            Some(d) if self.linger.is_some() || self.closing => {
                // Dropped; the sweep ends the linger once it is over.
                if let Some(l) = &mut self.linger {
                    l.received(d.len(), ctx.now);
                }
            }
            Some(d) => {
                if self.held.is_empty() && self.may_take() {
                    let (taken, _) = self.take(d, false, ctx, token);
                    self.held.extend_from_slice(&d[taken..]);
                } else {
                    self.held.extend_from_slice(d);
                }
            }
            None if res == 0 => self.eof = true,
            // Out of provided buffers: re-armed in `drive`.
            None if res == -libc::ENOBUFS || res == -libc::ECANCELED => {}
            None => self.eof = true, // reset or another error: nothing more comes
        }
    }

    /// The session may take input now: no send in flight (output must not
    /// move under the kernel) and none queued (pipelined requests wait for
    /// their predecessors' responses).
    fn may_take(&self) -> bool {
        self.sending == Sending::Idle && self.flushed() && !self.closing
    }

    /// Gives the session as much of `src` as it takes, then the EOF if
    /// `eof`; returns how much it took and what the connection waits for.
    fn take(&mut self, src: &[u8], eof: bool, ctx: &Ctx, token: usize) -> (usize, Pause) {
        let mut sock = Received { src, taken: 0, eof };
        let gen = self.gen.into();
        let process = &mut |s: &mut Session| ctx.process(s, token, gen);
        let (s, now, stopping) = (&mut self.session, ctx.now, ctx.stopping);
        // A turn's end lets other sockets have theirs; here all of the
        // input is taken now.
        loop {
            match driver::drive(s, &mut sock, &mut ctx.lent(), now, stopping, process) {
                Pause::Turn => {}
                pause => return (sock.taken, pause),
            }
        }
    }

    /// A task's result, applied now or once the send in flight completes.
    pub fn on_done(&mut self, done: TaskDone) {
        self.done = Some(done);
    }

    /// An output operation completed with `res`. False: the connection is
    /// finished (the peer is gone, or a file shrank).
    pub fn on_sent(&mut self, op: Op, res: i32, now: Instant) -> bool {
        let was = std::mem::replace(&mut self.sending, Sending::Idle);
        if op == Op::SpliceOut && res == -libc::EAGAIN {
            self.socket_full = true; // `drive` waits for POLLOUT, then splices
            return true;
        }
        if res == -libc::EINTR || res == -libc::EAGAIN {
            return true; // resubmitted by `drive`
        }
        if res < 0 || self.closing {
            return false;
        }
        if op == Op::Writable {
            self.socket_full = false;
            return true; // the splice follows from `drive`
        }
        let n = res as usize;
        let fd = self.sock.as_fd();
        let ok = match (op, was) {
            (Op::SpliceIn, _) if n == 0 => false, // the file shrank
            (Op::SpliceIn, _) => {
                self.in_pipe = n as u32;
                true
            }
            (Op::SpliceOut, _) => {
                self.in_pipe = self.in_pipe.saturating_sub(n as u32);
                self.session.out.advance(n, fd).is_ok()
            }
            _ => self.session.out.advance(n, fd).is_ok(),
        };
        self.session.on_write(now);
        ok
    }

    /// Moves the connection along, pushing what it needs to `sqes`. False
    /// when the connection is finished and should be closed.
    pub fn drive(&mut self, token: usize, ctx: &Ctx, sqes: &mut Vec<squeue::Entry>) -> bool {
        if self.sending == Sending::Idle && !self.closing && self.linger.is_none() {
            if let Some(done) = self.done.take() {
                self.session.complete(done);
            }
            // Output is out, or a task's result came: what the session
            // already holds is decoded before the input held here.
            ctx.process(&mut self.session, token, self.gen.into());
            let held = std::mem::take(&mut self.held);
            let (taken, pause) = self.take(&held, self.eof, ctx, token);
            self.held = held;
            self.held.drain(..taken);
            if self.held.is_empty() && self.held.capacity() > HELD_MAX {
                self.held = Vec::new();
            }
            // A file's bytes in the pipe are still in `out` until spliced
            // to the socket, so a send covers them too.
            match pause {
                Pause::Writable if !self.submit_output(token, ctx.stopping, sqes) => return false,
                Pause::Close => return false,
                _ => {}
            }
        }
        self.arm_recv(token, sqes);
        true
    }

    /// Queues the next output: a send (MSG_MORE on the last output, so its
    /// FIN shares the segment) or a file spliced through the pipe. False
    /// when no descriptor is left for a pipe.
    ///
    /// A send is quiet (`Op::SendQuiet`, MSG_WAITALL: its completion means
    /// all of it is out, or failure) when it empties the output of a
    /// keep-alive connection with nothing else pending (`still_quiet`) and
    /// is at most `quiet_max`; the worker then need not wait for it.
    fn submit_output(
        &mut self,
        token: usize,
        stopping: bool,
        sqes: &mut Vec<squeue::Entry>,
    ) -> bool {
        let sock = types::Fd(self.sock.as_raw_fd());
        if self.in_pipe > 0 && self.socket_full {
            let e = opcode::PollAdd::new(sock, libc::POLLOUT as u32)
                .build()
                .user_data(user_data(Op::Writable, token, self.gen));
            sqes.push(e);
            self.sending = Sending::Writable;
            return true;
        }
        if self.in_pipe > 0 {
            if let Some((r, _)) = &self.pipe {
                let e = opcode::Splice::new(types::Fd(r.as_raw_fd()), -1, sock, -1, self.in_pipe)
                    .flags(SPLICE_FLAGS)
                    .build()
                    .user_data(user_data(Op::SpliceOut, token, self.gen));
                sqes.push(e);
                self.sending = Sending::SpliceOut;
            }
            return true;
        }
        let may_be_quiet = !stopping
            && self.session.out.settles_with_front()
            && self.still_quiet()
            && self.session.conn.is_between_requests()
            && !self.session.is_done();
        let quiet_max = if may_be_quiet { self.quiet_max() } else { 0 };
        let fd = self.sock.as_fd();
        let (entry, sending) = match self.session.out.front(fd) {
            None => return true,
            Some(Front::Bytes { buf, more }) => {
                let quiet = may_be_quiet && buf.len() <= quiet_max;
                let (op, flags) = match (quiet, more) {
                    (true, _) => (Op::SendQuiet, libc::MSG_WAITALL),
                    (false, true) => (Op::Send, libc::MSG_MORE),
                    (false, false) => (Op::Send, 0),
                };
                let len = buf.len().min(u32::MAX as usize) as u32;
                let e = opcode::Send::new(sock, buf.as_ptr(), len)
                    .flags(libc::MSG_NOSIGNAL | flags)
                    .build()
                    .user_data(user_data(op, token, self.gen));
                (e, Sending::Bytes)
            }
            Some(Front::File { file, offset, len }) => {
                let file = types::Fd(file.as_raw_fd());
                if self.pipe.is_none() {
                    self.pipe = new_pipe();
                }
                let Some((_, w)) = &self.pipe else {
                    return false; // no descriptor for a pipe: the connection ends
                };
                let n = len.min(u64::from(SPLICE_CHUNK)) as u32;
                let off = i64::try_from(offset).unwrap_or(i64::MAX);
                let e = opcode::Splice::new(file, off, types::Fd(w.as_raw_fd()), -1, n)
                    .flags(SPLICE_FLAGS)
                    .build()
                    .user_data(user_data(Op::SpliceIn, token, self.gen));
                (e, Sending::SpliceIn)
            }
        };
        sqes.push(entry);
        self.sending = sending;
        true
    }

    /// Nothing but a send's completion would move the connection on, so
    /// its quiet send may complete unwaited for.
    pub fn still_quiet(&self) -> bool {
        self.held.is_empty()
            && self.done.is_none()
            && !self.eof
            && !self.closing
            && self.linger.is_none()
    }

    /// The largest quiet send: its progress shows only once all of it is
    /// out, so it is half what a reader at the least send rate takes in one
    /// send window. With no least rate none is quiet.
    fn quiet_max(&self) -> usize {
        let l = self.session.conn.limits();
        let window = u128::from(l.min_send_rate).saturating_mul(l.send_timeout.as_millis()) / 2000;
        QUIET_MAX.min(usize::try_from(window).unwrap_or(usize::MAX))
    }

    /// Output is in flight (a stalled peer's send is not waited for when
    /// its deadline passes).
    pub fn is_sending(&self) -> bool {
        self.sending != Sending::Idle
    }

    /// Arms the multishot receive if the connection can hold more input,
    /// or cancels it when it holds too much.
    fn arm_recv(&mut self, token: usize, sqes: &mut Vec<squeue::Entry>) {
        let want = !self.eof && !self.closing && self.held.len() < HELD_MAX;
        let ud = user_data(Op::Recv, token, self.gen);
        if want && !self.recv_armed {
            let e = opcode::RecvMulti::new(types::Fd(self.sock.as_raw_fd()), BUF_GROUP)
                .build()
                .user_data(ud);
            sqes.push(e);
            self.recv_armed = true;
            self.recv_cancelled = false;
        } else if !want && self.recv_armed && !self.recv_cancelled && !self.eof {
            sqes.push(cancel(ud));
            self.recv_cancelled = true;
        }
    }

    /// Starts closing: the socket is shut down so operations in flight end
    /// at once. With `linger` only writing is, and the receive stays armed
    /// to drop what the peer still sends.
    pub fn start_close(&mut self, linger: bool) {
        let how = if linger {
            libc::SHUT_WR
        } else {
            self.closing = true;
            libc::SHUT_RDWR
        };
        // SAFETY: shutdown takes no pointers; the socket is ours and open.
        unsafe { libc::shutdown(self.sock.as_raw_fd(), how) };
    }

    /// Forgets input held for the session, which a lingering connection
    /// will never read.
    pub fn drop_held(&mut self) {
        self.held = Vec::new();
    }

    /// Whether the peer's EOF has arrived.
    pub fn peer_closed(&self) -> bool {
        self.eof
    }
}

/// Received bytes as the drive loop reads them, then the EOF if it came.
/// Output goes through the ring, so a send says blocked and the drive
/// stops for it to be submitted.
struct Received<'a> {
    src: &'a [u8],
    taken: usize,
    eof: bool,
}

impl Socket for Received<'_> {
    fn send(&mut self, _: &mut OutQueue, _: u64) -> io::Result<Wrote> {
        Ok(Wrote::Blocked)
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let rest = &self.src[self.taken..];
        if rest.is_empty() && !self.eof {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.taken += n;
        Ok(n)
    }
}

/// A cancel for the operation with user_data `ud`.
pub fn cancel(ud: u64) -> squeue::Entry {
    opcode::AsyncCancel::new(ud)
        .build()
        .user_data(user_data(Op::Cancel, 0, 0))
}

/// A pipe to splice files through, nonblocking (see `SPLICE_FLAGS`);
/// None when out of descriptors.
fn new_pipe() -> Option<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return None;
    }
    // SAFETY: both descriptors are new and owned by nothing else.
    Some(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
