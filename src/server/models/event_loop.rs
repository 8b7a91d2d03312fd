//! One edge-triggered epoll reactor (mio) over a slab of non-blocking
//! connections; blocking work goes to the `Offload` pool and comes back via
//! the `Inbox` and a mio `Waker`. The `reactors` model runs N of these.

use std::io::{self, Read};
use std::net::TcpListener;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener as MioListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;

use crate::server::accept;
use crate::server::driver::{self, Lent, Pause, Socket};
use crate::server::linger::{drop_input, Linger};
use crate::server::loop_ctx::{self, Done, Env, Wake};
use crate::server::offload::Offload;
use crate::server::session::Session;
use crate::server::shutdown::{Clock, TickTimer, TICK};
use crate::server::workers::per_listener;
use crate::server::{Ready, ServerConfig, Shutdown};

use crate::server::outq::{OutQueue, Wrote};

const LISTENER: Token = Token(usize::MAX);
/// Raised when a job's response waits in the inbox.
const WAKER: Token = Token(usize::MAX - 1);
/// The shutdown wake-up descriptor, so a reactor closes its listener as
/// soon as shutdown begins, not one TICK later.
const WAKE: Token = Token(usize::MAX - 2);
/// The `TickTimer`, which bounds each wait instead of a timeout.
const TIMER: Token = Token(usize::MAX - 3);
/// Connections accepted per round at most, so a flood of new ones is not
/// all held in memory at once and does not hold up those already open.
const ACCEPT_BATCH: usize = 128;

pub fn run(listener: TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    let offload = Offload::for_model("event-loop")?;
    run_loop(listener, cfg, cfg.max_connections, &offload, shutdown)
}

/// The `reactors` model: N loops, each with its own thread and SO_REUSEPORT
/// listener, so the kernel spreads connections and no lock is shared.
pub fn run_reactors(
    listener: TcpListener,
    cfg: &ServerConfig,
    shutdown: &Shutdown,
    ready: Ready<'_>,
) -> anyhow::Result<()> {
    // One pool for all: file work is bounded by the disk, not the loops.
    let offload = &Offload::for_model("reactors")?;
    let names = ("reactors", "reactor");
    per_listener(listener, cfg, names, shutdown, ready, |l, share, set_up| {
        set_up.done(String::new());
        run_loop(l, cfg, share, offload, shutdown)
    })
}

/// One reactor loop, until shutdown.
fn run_loop(
    listener: TcpListener,
    cfg: &ServerConfig,
    max_conns: usize,
    offload: &Offload,
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    let mut reactor = Reactor::new(listener, cfg, max_conns, offload)?;
    let mut timer = TickTimer::new();
    let fds = [
        (shutdown.wake_fd(), WAKE),
        (timer.as_ref().map(|t| t.fd()), TIMER),
    ];
    for (fd, token) in fds {
        if let Some(fd) = fd {
            use std::os::fd::AsRawFd;
            let raw = &fd.as_raw_fd();
            let source = &mut mio::unix::SourceFd(raw);
            reactor
                .poll
                .registry()
                .register(source, token, Interest::READABLE)?;
        }
    }
    let mut events = Events::with_capacity(1024);
    loop {
        let timeout = if !reactor.again.is_empty() || reactor.accept_more {
            Some(Duration::ZERO)
        } else {
            timer.is_none().then_some(TICK)
        };
        if let Err(e) = reactor.poll.poll(&mut events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e.into());
            }
        }
        let now = Instant::now();
        let mut ready = reactor.take_ready(&events);
        let stopping = shutdown.is_set();
        reactor.take_done(&mut ready, now, stopping);
        reactor.accept(now);
        reactor.serve_fresh(now, stopping);
        reactor.serve_ready(ready, now, stopping);
        reactor.sweep_if_due(now, stopping);
        if std::mem::take(&mut reactor.tick_fired) && !timer.as_ref().is_some_and(TickTimer::arm) {
            // An unarmed timer never fires again: bound waits by TICK.
            timer = None;
        }
        if stopping && reactor.stopped(now) {
            return Ok(());
        }
    }
}

/// One reactor's state between wake-ups: its listener, its connections and
/// what is left to do for them.
struct Reactor<'a> {
    env: Env<'a, Waker>,
    done: Receiver<Done>,
    /// The generation the next accepted connection gets.
    next_gen: u64,
    poll: Poll,
    /// None once shutdown has begun: no more connections are taken.
    listener: Option<MioListener>,
    conns: Slab<ClientSocket>,
    max_conns: usize,
    /// Connections cut short for fairness, driven again without waiting.
    again: Vec<usize>,
    /// This round's connections (see `take_ready`), kept to reuse its buffer.
    ready: Vec<usize>,
    /// Accepted this round, not yet registered with epoll.
    fresh: Vec<usize>,
    /// The listener has (or may have) connections waiting.
    accept_pending: bool,
    /// The last round stopped at `ACCEPT_BATCH`: poll again without waiting.
    accept_more: bool,
    /// Accepting is paused until then after running out of resources.
    accept_paused_until: Option<Instant>,
    clock: Clock,
    /// The TICK timer fired this round: it is armed again after the sweep.
    tick_fired: bool,
}

impl<'a> Reactor<'a> {
    fn new(
        listener: TcpListener,
        cfg: &'a ServerConfig,
        max_conns: usize,
        offload: &'a Offload,
    ) -> io::Result<Self> {
        listener.set_nonblocking(true)?;
        let mut listener = MioListener::from_std(listener);
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        let (tx, done) = channel();
        let waker = Waker::new(poll.registry(), WAKER)?;
        Ok(Reactor {
            env: Env::new(cfg, offload, tx, waker, Lent::default()),
            done,
            next_gen: 0,
            poll,
            listener: Some(listener),
            conns: Slab::new(),
            max_conns,
            again: Vec::new(),
            ready: Vec::new(),
            fresh: Vec::new(),
            accept_pending: false,
            accept_more: false,
            accept_paused_until: None,
            clock: Clock::new(cfg.shutdown_grace),
            tick_fired: false,
        })
    }

    /// The connections to drive this round: those cut short last round and
    /// those with events, whose readiness is recorded on the way.
    fn take_ready(&mut self, events: &Events) -> Vec<usize> {
        let mut ready = std::mem::take(&mut self.ready);
        ready.append(&mut self.again);
        for ev in events.iter() {
            if ev.token() == LISTENER {
                self.accept_pending = true;
                continue;
            }
            if ev.token() == TIMER {
                self.tick_fired = true;
                continue;
            }
            if ev.token() == WAKER || ev.token() == WAKE {
                continue; // the inbox is read every round; shutdown is polled
            }
            let token = ev.token().0;
            if let Some(c) = self.conns.get_mut(token) {
                c.read_closed |= ev.is_read_closed();
                c.readable |= ev.is_readable() || ev.is_read_closed() || ev.is_error();
            }
            ready.push(token);
        }
        ready
    }

    /// Hands finished tasks' results to their connections to drive this
    /// round; one whose connection closed (token free or reused) is dropped.
    fn take_done(&mut self, ready: &mut Vec<usize>, now: Instant, stopping: bool) {
        while let Ok((token, gen, result)) = self.done.try_recv() {
            if let Some(c) = self.conns.get_mut(token).filter(|c| c.gen == gen) {
                c.session.complete(result);
                // Decode input buffered while the task ran; no read will.
                let ctx = self.env.ctx(now, stopping);
                ctx.process(&mut c.session, token, c.gen);
                ready.push(token);
            }
        }
    }

    /// Accepts what waits in the backlog, unless paused after running out
    /// of descriptors or memory.
    fn accept(&mut self, now: Instant) {
        self.accept_more = false;
        let paused = self.accept_paused_until.is_some_and(|t| now < t);
        if !self.accept_pending || paused {
            return;
        }
        let Some(l) = self.listener.as_ref() else {
            return;
        };
        for _ in 0..ACCEPT_BATCH {
            if self.conns.len() >= self.max_conns {
                return;
            }
            match l.accept() {
                Ok((stream, _)) => {
                    // Registered later, once for both directions: with edge
                    // triggering no epoll_ctl is needed per request.
                    self.fresh.push(self.conns.insert(ClientSocket {
                        stream,
                        session: Session::new(Arc::clone(&self.env.cfg.limits)),
                        readable: true,
                        read_closed: false,
                        gen: self.next_gen,
                        linger: None,
                    }));
                    self.next_gen += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.accept_pending = false;
                    return;
                }
                Err(e) => {
                    if let Some(pause) = accept::after_error(&e) {
                        self.accept_paused_until = Some(now + pause);
                        return;
                    }
                }
            }
        }
        // A full batch: the rest wait for the next round, which does not wait.
        self.accept_more = true;
    }

    /// Serves new connections at once, as their request has usually arrived,
    /// registering only those that must wait: one-shot ones skip epoll_ctl.
    fn serve_fresh(&mut self, now: Instant, stopping: bool) {
        // Taken out and put back, to keep its allocation across rounds.
        let mut fresh = std::mem::take(&mut self.fresh);
        for token in fresh.drain(..) {
            let Some(c) = self.conns.get_mut(token) else {
                continue;
            };
            let ctx = self.env.ctx(now, stopping);
            let d = drive(c, token, &ctx);
            // One that closes with a linger waits for its peer's input too.
            let waits = d != Pause::Close || c.session.conn.should_linger();
            let registered = waits
                && self
                    .poll
                    .registry()
                    .register(
                        &mut c.stream,
                        Token(token),
                        Interest::READABLE | Interest::WRITABLE,
                    )
                    .is_ok();
            if !registered {
                self.close_now(token);
            } else if d == Pause::Close {
                self.close(token, now);
            } else if d == Pause::Turn {
                self.again.push(token);
            }
        }
        self.fresh = fresh;
    }

    fn serve_ready(&mut self, mut ready: Vec<usize>, now: Instant, stopping: bool) {
        for &token in &ready {
            let Some(c) = self.conns.get_mut(token) else {
                continue;
            };
            if let Some(l) = &mut c.linger {
                if !drop_input(&mut c.stream, l) {
                    self.close_now(token);
                }
                continue;
            }
            let ctx = self.env.ctx(now, stopping);
            match drive(c, token, &ctx) {
                Pause::Turn => self.again.push(token),
                Pause::Close => self.close(token, now),
                // Starts the clock of a phase the drive entered.
                _ => c.session.observe(now),
            }
        }
        ready.clear();
        self.ready = ready;
    }

    /// Closes a connection, lingering (see `linger`) if its client may still
    /// be sending: writing is shut down and input dropped until it ends.
    fn close(&mut self, token: usize, now: Instant) {
        let Some(c) = self.conns.get_mut(token) else {
            return;
        };
        if c.linger.is_none() && c.session.conn.should_linger() {
            let _ = c.stream.shutdown(std::net::Shutdown::Write);
            let l = c.linger.insert(Linger::start(now));
            if drop_input(&mut c.stream, l) {
                return;
            }
        }
        self.close_now(token);
    }

    /// Closes a connection at once; its freed slot lets connections
    /// waiting in the backlog in.
    fn close_now(&mut self, token: usize) {
        // No deregister: closing the (never duplicated) socket removes it
        // from the epoll set, saving an epoll_ctl per connection.
        self.conns.try_remove(token);
        self.accept_pending |= self.listener.is_some();
    }

    /// Once a tick: deadlines, and idle connections closed when stopping.
    fn sweep_if_due(&mut self, now: Instant, stopping: bool) {
        let Some(due) = self.clock.sweep_due(now) else {
            return;
        };
        self.sweep(now, stopping, due.close_idle);
        self.accept_pending |= self.listener.is_some() && self.conns.len() < self.max_conns;
    }

    /// Applies deadlines (408 for partial requests, close for idle ones);
    /// with `close_idle`, also closes connections idle while stopping.
    fn sweep(&mut self, now: Instant, stopping: bool, close_idle: bool) {
        let ctx = self.env.ctx(now, stopping);
        let (mut dead, mut closing) = (Vec::new(), Vec::new());
        for (token, c) in self.conns.iter_mut() {
            if let Some(l) = c.linger {
                if l.is_over(now) {
                    dead.push(token);
                }
                continue;
            }
            let expired = c.session.is_expired(now);
            let idle_stop = close_idle && c.session.is_idle();
            if expired {
                c.session.on_timeout();
            }
            if expired || idle_stop {
                // Driving first reads a request that arrived since the last
                // wake-up, so it is answered instead of reset unread.
                match drive(c, token, &ctx) {
                    Pause::Close => closing.push(token),
                    // A response still being written (e.g. to a request
                    // just read) keeps the connection until it is out.
                    _ if expired || (idle_stop && c.session.is_idle()) => closing.push(token),
                    Pause::Turn => self.again.push(token),
                    _ => {}
                }
            }
        }
        for token in dead {
            self.close_now(token);
        }
        for token in closing {
            self.close(token, now);
        }
    }

    /// Shutdown: stops listening the first time, then says whether the
    /// loop is done (no connections left, or the grace period is over).
    fn stopped(&mut self, now: Instant) -> bool {
        if let Some(mut l) = self.listener.take() {
            let _ = self.poll.registry().deregister(&mut l);
        }
        self.clock.stop(now);
        self.conns.is_empty() || self.clock.grace_over(now)
    }
}

/// The reactor's wake-up when a task's result is in its inbox.
impl Wake for Waker {
    fn wake(&self) {
        // Best effort: a reactor that has gone needs no waking.
        let _ = Waker::wake(self);
    }
}

/// What driving a connection needs besides the connection itself.
type Ctx<'a> = loop_ctx::Ctx<'a, Waker>;

/// A client's non-blocking socket, the session it carries, and what epoll
/// last said about it.
struct ClientSocket {
    stream: TcpStream,
    session: Session,
    /// The socket may hold unread bytes: set by a readable event, cleared by
    /// a short read. Later bytes raise a new edge, so a read that could only
    /// return WouldBlock is skipped.
    readable: bool,
    /// The peer's FIN was reported: a short read does not mean drained,
    /// the EOF is still to be read and no further edge will announce it.
    read_closed: bool,
    /// Which connection this is among all that held its slab token.
    gen: u64,
    /// Closing with a linger: what arrives is read and dropped until then.
    linger: Option<Linger>,
}

/// A client's socket as the drive loop uses it: a read is skipped when
/// epoll's edges say nothing has arrived (see `ClientSocket::readable`).
struct Edge<'a> {
    stream: &'a mut TcpStream,
    readable: &'a mut bool,
    read_closed: bool,
}

impl Socket for Edge<'_> {
    fn send(&mut self, out: &mut OutQueue, budget: u64) -> io::Result<Wrote> {
        out.write_to(self.stream, budget)
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let r = self.stream.read(buf);
        match &r {
            Ok(n) => *self.readable = *n == buf.len() || self.read_closed,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => *self.readable = false,
            Err(_) => {}
        }
        r
    }

    fn may_recv(&self) -> bool {
        *self.readable
    }
}

/// Moves a connection along as far as its socket allows (`driver::drive`);
/// one whose request left a job waits until `take_done` brings the result.
fn drive(c: &mut ClientSocket, token: usize, ctx: &Ctx) -> Pause {
    let ClientSocket {
        stream,
        session,
        readable,
        read_closed,
        gen,
        ..
    } = c;
    let mut sock = Edge {
        stream,
        readable,
        read_closed: *read_closed,
    };
    let (now, stopping) = (ctx.now, ctx.stopping);
    let process = &mut |s: &mut Session| ctx.process(s, token, *gen);
    driver::drive(session, &mut sock, &mut ctx.lent(), now, stopping, process)
}
