//! One io_uring worker: its ring, listener, buffer ring and connections.
//! Each round submits everything queued and waits in one io_uring_enter;
//! what each completion means is in `completions`.

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use io_uring::types::Timespec;
use io_uring::{opcode, squeue, types, IoUring};
use slab::Slab;

use super::conn::{cancel, Conn, EventFd};
use super::ring::{self, BufRing, Features};
use super::{decode, user_data, Op};
use crate::server::driver::Lent;
use crate::server::linger::Linger;
use crate::server::loop_ctx::{Done, Env};
use crate::server::offload::Offload;
use crate::server::shutdown::{Clock, TICK};
use crate::server::workers::SetUp;
use crate::server::{ServerConfig, Shutdown};

/// How long a stopping worker waits for its connections' operations to end
/// after shutting their sockets down, before it frees their buffers.
const DRAIN_OPS: Duration = Duration::from_secs(2);

/// Whether the multishot accept is armed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Accepting {
    Off,
    Armed,
    Cancelling,
}

/// Sets up the worker's ring and reports how that went on `setup` (before
/// serving, so the start-up line can list the features), then serves.
pub fn run(
    listener: TcpListener,
    cfg: &ServerConfig,
    max_conns: usize,
    offload: &Offload,
    shutdown: &Shutdown,
    set_up: SetUp,
) -> anyhow::Result<()> {
    let mut w = match Worker::new(listener, cfg, max_conns, offload, shutdown) {
        Ok(w) => w,
        Err(e) => {
            set_up.failed(e.to_string());
            return Err(anyhow::anyhow!("io-uring: {e}"));
        }
    };
    set_up.done(format!("ring={}", w.features.list()));
    drop(set_up);
    w.serve()
}

struct Worker<'a> {
    /// First, so it is dropped (and the kernel done with every buffer)
    /// before the buffers below.
    ring: IoUring,
    bufs: BufRing,
    features: Features,
    env: Env<'a, EventFd>,
    shutdown: &'a Shutdown,
    done: Receiver<Done>,
    /// Where the eventfd read lands; boxed so it does not move.
    wake_buf: Box<u64>,
    wake_armed: bool,
    /// The eventfd read completed this round: finished tasks are waiting.
    woken: bool,
    /// The TICK timeout op is in the ring (a timeout on each wait would arm
    /// and cancel a kernel timer at every io_uring_enter).
    tick_armed: bool,
    /// Read by the kernel when the timeout op is submitted; boxed so it
    /// stays where the entry points until then.
    tick: Box<Timespec>,
    listener: Option<TcpListener>,
    accepting: Accepting,
    accept_paused_until: Option<Instant>,
    conns: Slab<Conn>,
    max_conns: usize,
    next_gen: u32,
    /// Entries for the next submit.
    sqes: Vec<squeue::Entry>,
    /// Completions of this round: user_data, result, flags.
    cqes: Vec<(u64, i32, u32)>,
    /// Connections to drive this round.
    touched: Vec<usize>,
    clock: Clock,
}

impl<'a> Worker<'a> {
    fn new(
        listener: TcpListener,
        cfg: &'a ServerConfig,
        max_conns: usize,
        offload: &'a Offload,
        shutdown: &'a Shutdown,
    ) -> io::Result<Self> {
        let (ring, features) = ring::build()?;
        let bufs = BufRing::register(&ring)?;
        // SAFETY: eventfd takes no pointers; a non-negative result is a new
        // descriptor nothing else owns.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if efd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above, the descriptor is ours to own.
        let efd = unsafe { OwnedFd::from_raw_fd(efd) };
        let (tx, done) = channel();
        Ok(Worker {
            ring,
            bufs,
            features,
            env: Env::new(cfg, offload, tx, EventFd(efd), Lent::default()),
            shutdown,
            done,
            wake_buf: Box::new(0),
            wake_armed: false,
            woken: false,
            tick_armed: false,
            tick: Box::new(Timespec::from(TICK)),
            listener: Some(listener),
            accepting: Accepting::Off,
            accept_paused_until: None,
            conns: Slab::new(),
            max_conns,
            next_gen: 0,
            sqes: Vec::new(),
            cqes: Vec::new(),
            touched: Vec::new(),
            clock: Clock::new(cfg.shutdown_grace),
        })
    }

    fn serve(&mut self) -> anyhow::Result<()> {
        if let Some(fd) = self.shutdown.wake_fd() {
            let e = opcode::PollAdd::new(types::Fd(fd.as_raw_fd()), libc::POLLIN as u32)
                .build()
                .user_data(user_data(Op::Stop, 0, 0));
            self.sqes.push(e);
        }
        self.arm_wake();
        // One clock read a round: the round's start is when its wait ended.
        let mut now = Instant::now();
        loop {
            let stopping = self.shutdown.is_set();
            if stopping && self.stopped(now) {
                return self.finish();
            }
            self.arm_accept(now);
            self.wait()?;
            now = Instant::now();
            let stopping = self.shutdown.is_set();
            self.reap(now, stopping);
            if std::mem::take(&mut self.woken) {
                self.take_done();
            }
            self.drive_touched(now, stopping);
            self.sweep_if_due(now, stopping);
        }
    }

    /// Submits every queued entry and waits for completions in one
    /// io_uring_enter; the TICK timeout op bounds the wait.
    fn wait(&mut self) -> io::Result<()> {
        if !self.tick_armed {
            let mut e = opcode::Timeout::new(&*self.tick);
            if self.features.quiet_sends {
                e = e.flags(types::TimeoutFlags::MULTISHOT);
            }
            self.sqes
                .push(e.build().user_data(user_data(Op::Tick, 0, 0)));
            self.tick_armed = true;
        }
        let want = self.completions_to_wait_for();
        self.flush()?;
        match self.ring.submit_and_wait(want) {
            Ok(_) => Ok(()),
            Err(e) if submit_can_retry(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Two when every entry of the round is a quiet send whose connection
    /// still has nothing else to do, else one: such a send completes inside
    /// the enter that submits it and needs nothing prompt, so the round
    /// waits for the next event too rather than entering again for it.
    /// Rechecked here, since a later completion of the round may have
    /// brought the connection input or EOF. A fired tick ends the wait; one
    /// fired just before it began does not, hence a multishot tick.
    fn completions_to_wait_for(&self) -> usize {
        let quiet = |e: &squeue::Entry| match decode(e.get_user_data()) {
            Some((Op::SendQuiet, token, gen)) => self
                .conns
                .get(token)
                .is_some_and(|c| c.gen == gen && c.still_quiet()),
            _ => false,
        };
        // Connections touched before the wait (shutdown's notice) are
        // driven after it: not put off.
        let nothing_else = self.touched.is_empty() && !self.sqes.is_empty();
        match self.features.quiet_sends && nothing_else && self.sqes.iter().all(quiet) {
            true => 2,
            false => 1,
        }
    }

    /// Moves queued entries into the submission queue, submitting when it
    /// fills.
    fn flush(&mut self) -> io::Result<()> {
        let (mut sent, mut result) = (0, Ok(()));
        'entries: for e in &self.sqes {
            // SAFETY: every entry points only at memory that outlives its
            // operation: connections' output (not touched while a send is
            // in flight, kept until the send completes), the boxed wake
            // buffer and the buffer ring, all dropped after the ring.
            while unsafe { self.ring.submission().push(e) }.is_err() {
                match self.ring.submit() {
                    Ok(_) => {}
                    // A full completion queue (or a signal): the rest waits
                    // until this round's completions are reaped.
                    Err(err) if submit_can_retry(&err) => break 'entries,
                    Err(err) => {
                        result = Err(err);
                        break 'entries;
                    }
                }
            }
            sent += 1;
        }
        self.sqes.drain(..sent);
        result
    }

    fn arm_wake(&mut self) {
        let buf = (&mut *self.wake_buf as *mut u64).cast::<u8>();
        let e = opcode::Read::new(types::Fd(self.env.inbox.waker.0.as_raw_fd()), buf, 8)
            .build()
            .user_data(user_data(Op::Wake, 0, 0));
        self.sqes.push(e);
        self.wake_armed = true;
    }

    /// Arms the multishot accept when it is off and may run; cancels it at
    /// the connection limit.
    fn arm_accept(&mut self, now: Instant) {
        let paused = self.accept_paused_until.is_some_and(|t| now < t);
        let full = self.conns.len() >= self.max_conns;
        let ud = user_data(Op::Accept, 0, 0);
        match (&self.listener, self.accepting) {
            (Some(l), Accepting::Off) if !full && !paused => {
                // Nonblocking, so a splice to a full socket answers EAGAIN
                // rather than holding an io-wq thread (conn's SPLICE_FLAGS).
                let e = opcode::AcceptMulti::new(types::Fd(l.as_raw_fd()))
                    .flags(libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK)
                    .build()
                    .user_data(ud);
                self.sqes.push(e);
                self.accepting = Accepting::Armed;
            }
            (_, Accepting::Armed) if full || self.listener.is_none() => {
                self.sqes.push(cancel(ud));
                self.accepting = Accepting::Cancelling;
            }
            _ => {}
        }
    }

    /// The connection at `token` if it is still the one of generation `gen`.
    fn conn(&mut self, token: usize, gen: u32) -> Option<&mut Conn> {
        self.conns.get_mut(token).filter(|c| c.gen == gen)
    }

    fn touch(&mut self, token: usize) {
        if let Some(c) = self.conns.get_mut(token) {
            if !c.touched {
                c.touched = true;
                self.touched.push(token);
            }
        }
    }

    fn drive_touched(&mut self, now: Instant, stopping: bool) {
        // Most rounds touch nothing: completions drive their connections.
        if self.touched.is_empty() {
            return;
        }
        // A drive may touch a connection again (a close that starts to
        // linger): loop, or it is lost off the list with its flag still set.
        let mut touched = std::mem::take(&mut self.touched);
        while !touched.is_empty() {
            for token in touched.drain(..) {
                self.drive_one(token, now, stopping, true);
            }
            std::mem::swap(&mut touched, &mut self.touched);
        }
        // Both are empty now: the one with room is kept for next round.
        if touched.capacity() > self.touched.capacity() {
            self.touched = touched;
        }
    }

    /// Drives the connection at `token`, if any: taken off the touched list
    /// (`listed`), or where its completion is handled unless it is on it.
    /// Driving it once per completion is safe: a send or receive is marked
    /// in flight as it is queued.
    fn drive_one(&mut self, token: usize, now: Instant, stopping: bool, listed: bool) {
        let ctx = self.env.ctx(now, stopping);
        let Some(c) = self.conns.get_mut(token) else {
            return;
        };
        if listed {
            c.touched = false;
        } else if c.touched {
            return;
        }
        if c.closing {
            if !c.in_flight() {
                self.conns.remove(token);
            }
            return;
        }
        if c.linger.is_some() && c.peer_closed() {
            self.close(token, now);
            return;
        }
        if c.drive(token, &ctx, &mut self.sqes) {
            // Starts the clock of a phase the drive entered.
            c.session.observe(now);
        } else {
            self.close(token, now);
        }
    }

    /// Closes a connection: lingering first if its peer may still be
    /// sending a body the server did not read; otherwise its socket is shut
    /// down and it goes once no operation of its is in flight.
    fn close(&mut self, token: usize, now: Instant) {
        let Some(c) = self.conns.get_mut(token) else {
            return;
        };
        if c.closing {
            return;
        }
        // A connection that lingered (its time is up, or its peer closed)
        // is closed outright.
        let lingered = c.linger.take().is_some();
        if !lingered && !c.peer_closed() && c.session.conn.should_linger() {
            // What it holds is never read now; kept, a full hold would
            // stop the receive that drops the rest (and the linger's end).
            c.drop_held();
            c.start_close(true);
            c.linger = Some(Linger::start(now));
            self.touch(token);
            return;
        }
        if c.in_flight() {
            c.start_close(false);
        } else {
            self.conns.remove(token);
        }
    }

    /// Once a tick: deadlines, lingering ends, and idle connections closed
    /// when stopping.
    fn sweep_if_due(&mut self, now: Instant, stopping: bool) {
        let Some(due) = self.clock.sweep_due(now) else {
            return;
        };
        let mut dead = Vec::new();
        for (token, c) in self.conns.iter_mut() {
            if c.closing {
                continue;
            }
            if let Some(l) = c.linger {
                if l.is_over(now) {
                    dead.push(token); // `close` ends the linger
                }
                continue;
            }
            let expired = c.session.is_expired(now);
            if expired && c.is_sending() {
                // A stalled peer: its send is not waited for.
                dead.push(token);
            } else if expired {
                // The 408 (if any) goes out, then the drive closes it.
                c.session.on_timeout();
                if !c.touched {
                    c.touched = true;
                    self.touched.push(token);
                }
            } else if due.close_idle && c.is_idle() && !c.is_sending() {
                dead.push(token);
            }
        }
        for token in dead {
            self.close(token, now);
        }
        self.drive_touched(now, stopping);
    }

    /// Shutdown: stops accepting the first time, then says whether the
    /// worker is done (no connections left, or the grace period is over).
    fn stopped(&mut self, now: Instant) -> bool {
        if self.clock.stop(now) {
            self.listener = None;
            self.arm_accept(now);
            // Connections between requests learn of it now, not at their
            // next request: their next response closes.
            let tokens: Vec<usize> = self.conns.iter().map(|(t, _)| t).collect();
            for t in tokens {
                self.touch(t);
            }
        }
        self.conns.is_empty() || self.clock.grace_over(now)
    }

    /// Ends every connection and waits (boundedly) for the kernel to finish
    /// with their buffers before they are freed.
    fn finish(&mut self) -> anyhow::Result<()> {
        for (_, c) in self.conns.iter_mut() {
            c.linger = None;
            c.start_close(false);
        }
        if self.wake_armed {
            self.sqes.push(cancel(user_data(Op::Wake, 0, 0)));
        }
        let until = Instant::now() + DRAIN_OPS;
        loop {
            self.conns.retain(|_, c| c.in_flight());
            if self.conns.is_empty() && !self.wake_armed {
                return Ok(());
            }
            if Instant::now() >= until {
                // The kernel may still own buffers of operations that did
                // not end: leaked, they cannot be written after being freed.
                std::mem::forget(std::mem::take(&mut self.conns));
                std::mem::forget(std::mem::replace(&mut self.wake_buf, Box::new(0)));
                self.bufs.leak();
                return Ok(());
            }
            self.wait()?;
            self.reap(Instant::now(), true);
            self.touched.clear();
        }
    }
}

/// Submit errors that mean "reap completions, then try again".
fn submit_can_retry(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR | libc::EBUSY | libc::EAGAIN)
    )
}

mod completions;
#[cfg(test)]
mod tests;
