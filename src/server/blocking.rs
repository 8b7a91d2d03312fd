//! Drives a `Session` over a blocking socket: the IO loop of every model
//! that serves with blocking reads and writes, and the serial worker that
//! accepts and serves one connection at a time (alone, or per fork).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, Read};
use std::net::{Shutdown as NetShutdown, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::accept::{self, Accepted, ConnLimit};
use super::driver::{self, Lent, Pause, Socket};
use super::handlers::App;
use super::linger::{drop_input, Linger};
use super::outq::{OutQueue, Wrote};
use super::session::Session;
use super::shutdown::{Clock, Shutdown, TICK};
use super::sockopt;
use super::ServerConfig;
use crate::http::{Limits, Phase};

/// Stack of a thread serving connections: the handlers need little, and a
/// thread-per-connection model runs many such threads at once.
pub const STACK_SIZE: usize = 256 * 1024;

/// What a blocking worker asks of whatever feeds it connections.
pub trait Feed {
    /// Another connection waits for this worker: the current one then gets
    /// `Connection: close` instead of holding it through its idle time.
    fn others_waiting(&self) -> bool;
    /// Shutdown was just seen while serving: stop taking connections now,
    /// not when this one ends (models with an accepting thread do nothing).
    fn stop_accepting(&self) {}
    /// The connection made no progress for a tick: a worker fed from the
    /// kernel's backlog accepts what waits there, so their clocks start now
    /// rather than when each reaches the worker. Others do nothing.
    fn stalled(&self) {}
}

/// A worker that is the only one its connection can have: a thread per
/// connection, whose accepting thread closes the listener itself.
pub struct Alone;

impl Feed for Alone {
    fn others_waiting(&self) -> bool {
        false
    }
}

/// Serves one connection until it closes. Its clocks run from `accepted`,
/// so time queued for a worker counts against a slow client. Once shutdown
/// is `grace` old it is dropped even mid-transfer: the iterative model
/// serves on the main thread, so nothing else would bound its exit.
pub fn serve(
    mut stream: TcpStream,
    accepted: Instant,
    app: &App,
    limits: &Arc<Limits>,
    shutdown: &Shutdown,
    grace: Duration,
    feed: &dyn Feed,
) {
    // Reads and writes wake at least every TICK so deadlines and shutdown
    // are noticed without a timer thread.
    let _ = stream.set_read_timeout(Some(TICK));
    let _ = stream.set_write_timeout(Some(TICK));
    let mut s = Session::accepted_at(Arc::clone(limits), accepted);
    // The first read does not wait if the clock already ran out: judged on
    // what it sent while queued, an expired client costs a read, not a tick.
    let now = Instant::now();
    let expired = s.is_expired(now);
    let mut sock = Blocking {
        stream: &stream,
        read_now: expired,
        read: false,
        waited: None,
    };
    // Deadlines wait for one read: a connection whose clock ran out in
    // the queue may have sent its request meanwhile.
    let mut read_once = false;
    // A read found nothing for a whole tick after shutdown began.
    let mut quiet_since_stop = false;
    // Only its shutdown half: each read wakes every TICK, so no sweep.
    let mut stop = Clock::new(grace);
    // No lent buffers: a thread serves one connection, whose own are warm.
    let lent = &mut Lent::none();
    let process = &mut |s: &mut Session| process_inline(s, app);
    loop {
        // Checked after every read, not only on a read timeout: a trickling
        // client never lets a read time out.
        if read_once && expired_now(&mut s, &stream) {
            s.on_timeout();
        }
        let stopping = shutdown.is_set();
        if stopping && stop.stop(Instant::now()) {
            feed.stop_accepting();
        }
        if stop.grace_over(Instant::now()) {
            break;
        }
        let between = s.is_idle();
        if stopping {
            // End between requests only once a read found nothing, so a
            // request sent just before is answered (with close), not reset.
            if between && quiet_since_stop {
                break;
            }
        } else if between && feed.others_waiting() {
            // Say `Connection: close` rather than race an idle close.
            s.close_after_response();
        }
        // One read a drive, so the clocks above are looked at after each.
        sock.read = false;
        let pause = driver::drive(&mut s, &mut sock, lent, Instant::now(), stopping, process);
        read_once |= sock.read;
        match pause {
            Pause::Close => break,
            // Output waited a tick without progress.
            Pause::Writable => {
                let now = Instant::now();
                if s.is_expired(now) {
                    break;
                }
                feed.stalled();
            }
            Pause::Readable if sock.waited.is_some() => {
                // EINTR (the shutdown signal itself) is not a quiet tick.
                if stopping && sock.waited != Some(io::ErrorKind::Interrupted) {
                    quiet_since_stop = true;
                }
                feed.stalled();
                // An idle keep-alive connection yields to one waiting; a
                // fresh one does not, as its request may be on the way.
                if s.conn.phase() == Phase::Idle && s.has_answered() && feed.others_waiting() {
                    break;
                }
            }
            _ => {}
        }
    }
    if s.conn.should_linger() {
        linger(&mut stream);
    }
}

/// A blocking socket as the drive loop uses it: reads and writes wait at
/// most a TICK (reported as WouldBlock, as is EINTR); one read per drive.
struct Blocking<'a> {
    stream: &'a TcpStream,
    /// The next read takes what has arrived and does not wait.
    read_now: bool,
    /// This drive has read.
    read: bool,
    /// Why the last read got nothing: its tick passed, or a signal came.
    waited: Option<io::ErrorKind>,
}

impl Socket for Blocking<'_> {
    fn send(&mut self, out: &mut OutQueue, _: u64) -> io::Result<Wrote> {
        match out.write_once(&mut self.stream) {
            Ok(Some(true)) => Ok(Wrote::All),
            // Progress: back to the serve loop, which looks at its clocks.
            Ok(Some(false)) => Ok(Wrote::Budget),
            Ok(None) => Ok(Wrote::Blocked),
            Err(e) if is_timeout(&e) => Ok(Wrote::Blocked),
            Err(e) => Err(e),
        }
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read = true;
        let read = match std::mem::take(&mut self.read_now) {
            true => read_now(self.stream, buf),
            false => (&mut &*self.stream).read(buf),
        };
        self.waited = read
            .as_ref()
            .err()
            .filter(|e| is_timeout(e))
            .map(io::Error::kind);
        match read {
            Err(e) if is_timeout(&e) => Err(io::ErrorKind::WouldBlock.into()),
            r => r,
        }
    }

    fn may_recv(&self) -> bool {
        !self.read
    }
}

/// The listener a serial worker accepts from, and the connections it
/// has accepted ahead of serving them.
struct Serial<'a> {
    listener: &'a TcpListener,
    /// Whether this worker may stop the listener for everyone: false in a
    /// forked worker, whose shared listener only the parent closes.
    owns_listener: bool,
    /// Connections open in this worker, served and waiting: the server's
    /// connection limit (per process for prefork).
    limit: ConnLimit,
    /// Connections taken from the backlog while the served one stalled,
    /// oldest first: their clocks run while they wait, so slow clients
    /// expire together. Still served one at a time, in arrival order.
    waiting: RefCell<VecDeque<Accepted>>,
    shutdown: &'a Shutdown,
}

impl Serial<'_> {
    /// The oldest connection waiting, else the next from the listener;
    /// None once shutdown begins: those waiting are closed unread, like
    /// the kernel's backlog, as only the one being served gets the grace.
    fn next(&self) -> Option<Accepted> {
        if self.shutdown.is_set() {
            return None;
        }
        let waited = self.waiting.borrow_mut().pop_front();
        waited.or_else(|| accept::next(self.listener, &self.limit, self.shutdown))
    }
}

impl Feed for Serial<'_> {
    fn others_waiting(&self) -> bool {
        !self.waiting.borrow().is_empty() || accept::readable(self.listener, Duration::ZERO)
    }

    fn stop_accepting(&self) {
        if self.owns_listener {
            accept::stop_listening(self.listener);
        }
    }

    fn stalled(&self) {
        if !self.shutdown.is_set() {
            let mut waiting = self.waiting.borrow_mut();
            accept::take_backlog(self.listener, &self.limit, &mut waiting);
        }
    }
}

/// Accepts and serves one connection at a time until shutdown (a serial
/// model, or a forked worker). The listener must be non-blocking; with
/// `owns_listener`, shutdown closes it at once, even mid-connection.
pub fn serve_serially(
    listener: &TcpListener,
    cfg: &ServerConfig,
    shutdown: &Shutdown,
    owns_listener: bool,
) {
    let feed = Serial {
        listener,
        owns_listener,
        limit: ConnLimit::new(cfg.max_connections),
        waiting: RefCell::new(VecDeque::new()),
        shutdown,
    };
    while let Some((stream, _slot, accepted)) = feed.next() {
        serve(
            stream,
            accepted,
            &cfg.app,
            &cfg.limits,
            shutdown,
            cfg.shutdown_grace,
            &feed,
        );
    }
    if owns_listener {
        accept::stop_listening(listener);
    }
}

/// Whether the deadline has passed, counting for a body the bytes unread
/// in the socket: an upload queued for this worker sent them in time.
fn expired_now(s: &mut Session, stream: &TcpStream) -> bool {
    let now = Instant::now();
    if !s.is_expired(now) {
        return false;
    }
    if s.conn.phase() != Phase::Body {
        return true;
    }
    s.note_unread(sockopt::unread(stream.as_fd()));
    s.is_expired(now)
}

/// Decodes and answers the input, running blocking work right here: this
/// thread serves only this connection, so nothing else waits on it.
pub fn process_inline(s: &mut Session, app: &App) {
    s.process(app);
    while let Some(task) = s.take_task() {
        s.complete(task.run());
        s.process(app);
    }
}

/// One read that takes what has arrived and does not wait for more.
fn read_now(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    stream.set_nonblocking(true)?;
    let read = (&mut &*stream).read(buf);
    stream.set_nonblocking(false)?;
    read
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Closes with the linger every model uses (see `linger`), the reads
/// waiting at most until the linger's deadline.
fn linger(stream: &mut TcpStream) {
    let _ = stream.shutdown(NetShutdown::Write);
    let mut l = Linger::start(Instant::now());
    loop {
        let left = l.deadline().saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return;
        }
        if !drop_input(&mut *stream, &mut l) {
            return;
        }
    }
}
