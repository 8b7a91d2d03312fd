//! One epoll reactor (mio, edge-triggered): non-blocking sockets, a slab of
//! connections, accept and read/write until WouldBlock.

use std::io::{self, Read};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use mio::net::{TcpListener as MioListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use slab::Slab;

use crate::server::accept::{is_transient, ACCEPT_BACKOFF};
use crate::server::handlers::App;
use crate::server::session::Session;
use crate::server::shutdown::TICK;
use crate::server::{ServerConfig, Shutdown};

const LISTENER: Token = Token(usize::MAX);
/// Reads served for one connection per wake-up before others get a turn;
/// a connection cut short is revisited on the next round.
const READS_PER_TURN: usize = 16;
/// The reactor's shared read buffer for connections between requests.
const SCRATCH: usize = 64 * 1024;

pub fn run(listener: TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    run_loop(listener, cfg, cfg.max_connections, shutdown)
}

struct Conn {
    stream: TcpStream,
    session: Session,
    /// The socket may hold unread bytes. Cleared when a read comes back
    /// short (the receive queue was drained), set by a readable event:
    /// with edge triggering, bytes arriving later raise a new edge, so the
    /// read that would only return WouldBlock is skipped (one syscall per
    /// request fewer), and so is the read on a writable-only wake-up.
    readable: bool,
    /// The peer's FIN was reported: a short read does not mean drained,
    /// the EOF is still to be read and no further edge will announce it.
    read_closed: bool,
}

/// What driving a connection left it needing.
#[derive(PartialEq, Eq)]
enum Drive {
    /// Waiting for the socket (readable or writable edge).
    Wait,
    /// Cut short for fairness; drive again next round.
    Again,
    Close,
}

/// The reactor loop; also one reactor of the `reactors` model.
pub fn run_loop(
    listener: TcpListener,
    cfg: &ServerConfig,
    max_conns: usize,
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    listener.set_nonblocking(true)?;
    let mut listener = Some(MioListener::from_std(listener));
    let mut poll = Poll::new()?;
    if let Some(l) = listener.as_mut() {
        poll.registry().register(l, LISTENER, Interest::READABLE)?;
    }
    let mut events = Events::with_capacity(1024);
    let mut conns: Slab<Conn> = Slab::new();
    let mut again: Vec<usize> = Vec::new();
    let mut accept_paused_until: Option<Instant> = None;
    let mut accept_pending = false;
    let mut last_sweep = Instant::now();
    let mut stop_deadline: Option<Instant> = None;
    let mut stop_started: Option<Instant> = None;
    let app: &App = &cfg.app;
    let mut scratch = vec![0u8; SCRATCH];
    let mut fresh: Vec<usize> = Vec::new();

    loop {
        let timeout = if again.is_empty() {
            TICK
        } else {
            Duration::ZERO
        };
        if let Err(e) = poll.poll(&mut events, Some(timeout)) {
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e.into());
            }
        }
        let now = Instant::now();
        let mut ready: Vec<usize> = std::mem::take(&mut again);
        for ev in events.iter() {
            if ev.token() == LISTENER {
                accept_pending = true;
            } else {
                let token = ev.token().0;
                if let Some(c) = conns.get_mut(token) {
                    c.read_closed |= ev.is_read_closed();
                    c.readable |= ev.is_readable() || ev.is_read_closed() || ev.is_error();
                }
                ready.push(token);
            }
        }
        if accept_paused_until.is_some_and(|t| now >= t) {
            accept_paused_until = None;
        }
        if accept_pending && accept_paused_until.is_none() {
            if let Some(l) = listener.as_ref() {
                match accept_all(l, &mut conns, max_conns, &cfg.limits, &mut fresh) {
                    Ok(()) => accept_pending = false,
                    Err(AcceptStop::Full) => {}
                    Err(AcceptStop::Backoff) => accept_paused_until = Some(now + ACCEPT_BACKOFF),
                }
            }
        }
        let stopping = shutdown.is_set();
        // A new connection's request has usually arrived by the time it is
        // accepted: serve it at once, and register with epoll only if the
        // socket makes it wait. A connection that is answered and closed
        // in one go (no keep-alive) then costs no epoll_ctl and no wake-up.
        for token in fresh.drain(..) {
            let Some(c) = conns.get_mut(token) else {
                continue;
            };
            let d = drive(c, app, stopping, &mut scratch);
            let registered = d != Drive::Close
                && poll
                    .registry()
                    .register(
                        &mut c.stream,
                        Token(token),
                        Interest::READABLE | Interest::WRITABLE,
                    )
                    .is_ok();
            if !registered {
                close(&mut conns, token);
                accept_pending |= listener.is_some();
            } else if d == Drive::Again {
                again.push(token);
            }
        }
        for token in ready {
            let Some(c) = conns.get_mut(token) else {
                continue;
            };
            match drive(c, app, stopping, &mut scratch) {
                Drive::Wait => {
                    c.session.deadline(now);
                }
                Drive::Again => again.push(token),
                Drive::Close => {
                    close(&mut conns, token);
                    // A freed slot lets connections waiting in the backlog in.
                    accept_pending |= listener.is_some();
                }
            }
        }
        if now.duration_since(last_sweep) >= TICK {
            last_sweep = now;
            // Idle connections are closed once shutdown is a tick old:
            // requests their clients sent just before it are answered
            // (with `Connection: close`) rather than reset unread.
            let close_idle = stop_started.is_some_and(|t| now.duration_since(t) >= TICK);
            sweep(
                &mut conns,
                app,
                now,
                stopping,
                close_idle,
                &mut again,
                &mut scratch,
            );
            accept_pending |= listener.is_some() && conns.len() < max_conns;
        }
        if stopping {
            if let Some(mut l) = listener.take() {
                let _ = poll.registry().deregister(&mut l);
                stop_deadline = Some(now + cfg.shutdown_grace);
                stop_started = Some(now);
            }
            if conns.is_empty() || stop_deadline.is_some_and(|d| now >= d) {
                return Ok(());
            }
        }
    }
}

enum AcceptStop {
    /// At the connection limit: the rest wait in the backlog.
    Full,
    /// Out of descriptors or memory: retry after a pause, do not spin.
    Backoff,
}

/// Accepts until WouldBlock; new connections go to `fresh`, not yet
/// registered with epoll.
fn accept_all(
    listener: &MioListener,
    conns: &mut Slab<Conn>,
    max_conns: usize,
    limits: &crate::http::Limits,
    fresh: &mut Vec<usize>,
) -> Result<(), AcceptStop> {
    loop {
        if conns.len() >= max_conns {
            return Err(AcceptStop::Full);
        }
        match listener.accept() {
            Ok((stream, _)) => {
                // Registered later, once for both directions: with edge
                // triggering no epoll_ctl is needed per request.
                fresh.push(conns.insert(Conn {
                    stream,
                    session: Session::new(limits.clone()),
                    readable: true,
                    read_closed: false,
                }));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_transient(&e) && e.kind() == io::ErrorKind::ConnectionAborted => {}
            Err(e) => {
                if !is_transient(&e) {
                    eprintln!("loadlab: accept failed: {e}");
                }
                return Err(AcceptStop::Backoff);
            }
        }
    }
}

/// Moves a connection along as far as its socket allows. A connection
/// between requests reads into `scratch`, so an idle one holds only a
/// buffer the size of its last request, not a whole read buffer.
fn drive(c: &mut Conn, app: &App, stopping: bool, scratch: &mut [u8]) -> Drive {
    let mut reads = 0;
    loop {
        if !c.session.out.is_empty() {
            match c.session.out.write_to(&mut c.stream) {
                Ok(true) => c.session.on_write(Instant::now()),
                Ok(false) => return Drive::Wait,
                Err(_) => return Drive::Close,
            }
            // Output drained: pipelined requests may be waiting.
            c.session.process(app);
            if !c.session.out.is_empty() {
                continue;
            }
        }
        if c.session.is_done() {
            return Drive::Close;
        }
        if stopping {
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
            &mut scratch[..]
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
                    c.session.conn.feed(&scratch[..n]);
                } else {
                    c.session.conn.filled(n);
                }
                c.session.on_read(Instant::now());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                c.readable = false;
                return Drive::Wait;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Drive::Close,
        }
        c.session.process(app);
    }
}

/// Applies deadlines (408 for partial requests, close for idle ones) and,
/// with `close_idle`, closes connections that stay idle while stopping.
fn sweep(
    conns: &mut Slab<Conn>,
    app: &App,
    now: Instant,
    stopping: bool,
    close_idle: bool,
    again: &mut Vec<usize>,
    scratch: &mut [u8],
) {
    let mut dead = Vec::new();
    for (token, c) in conns.iter_mut() {
        let expired = c.session.deadline(now).is_some_and(|d| now >= d);
        let idle = |c: &Conn| {
            c.session.conn.phase() == crate::http::Phase::Idle && c.session.out.is_empty()
        };
        let idle_stop = close_idle && idle(c);
        if expired {
            c.session.on_timeout();
        }
        if expired || idle_stop {
            // Driving first reads a request that arrived since the last
            // wake-up, so it is answered instead of reset unread.
            match drive(c, app, stopping, scratch) {
                Drive::Close => dead.push(token),
                // A response still being written (e.g. to a request
                // just read) keeps the connection until it is out.
                _ if expired || (idle_stop && idle(c)) => dead.push(token),
                Drive::Again => again.push(token),
                Drive::Wait => {}
            }
        }
    }
    for token in dead {
        close(conns, token);
    }
}

fn close(conns: &mut Slab<Conn>, token: usize) {
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
