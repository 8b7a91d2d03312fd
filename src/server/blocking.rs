//! Drives a `Session` over a blocking socket: the IO loop shared by every
//! model that serves a connection with blocking reads and writes, and the
//! serial worker that accepts and serves one connection at a time (a
//! model's whole loop, or each forked process's).

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
use super::shutdown::{Shutdown, TICK};
use super::sockopt;
use super::ServerConfig;
use crate::http::{Limits, Phase};

/// Stack of a thread serving connections (a thread per connection, a
/// pool's workers): the handlers need little, and E1 runs 1,000 of them
/// at once.
pub const STACK_SIZE: usize = 256 * 1024;

/// What a blocking worker asks of whatever feeds it connections.
pub trait Feed {
    /// Another connection is queued for this worker: then the current one
    /// gets `Connection: close` on its next response instead of holding
    /// the worker through its keep-alive idle time.
    fn others_waiting(&self) -> bool;
    /// Shutdown was just seen while serving: stop taking connections now,
    /// not when this one ends. The iterative model closes its listener
    /// here; models with an accepting thread of their own do nothing.
    fn stop_accepting(&self) {}
    /// The connection being served made no progress for a tick (a silent
    /// or trickling client, or a reader that takes nothing): a worker fed
    /// straight from the kernel's backlog accepts what waits there now,
    /// so those connections' clocks start instead of each reaching the
    /// worker with its whole timeout ahead of it. Models that accept
    /// eagerly already stamp their connections and do nothing.
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
/// so time spent waiting for a worker counts against a silent or slow
/// client, and a queue full of them drains at once instead of holding
/// each worker for a whole timeout. Once shutdown has been set for
/// `grace`, the connection is dropped even mid-transfer: the iterative
/// model serves on the main thread, so nothing else would bound its exit.
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
    // The first read does not wait when the clock has already run out:
    // the connection is judged on what it sent while it waited, so a
    // backlog of expired slow clients is shed at the pace of one read
    // each, not one tick each.
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
    let mut stop = StopClock::new(grace, feed);
    // No lent buffers: a thread serves one connection, whose own are warm.
    let lent = &mut Lent::none();
    let process = &mut |s: &mut Session| process_inline(s, app);
    loop {
        // Deadlines are checked after every read, not only when a read
        // times out: a client trickling a byte every few milliseconds never
        // lets a read time out and would hold this worker for ever.
        if read_once && expired_now(&mut s, &stream) {
            s.on_timeout();
        }
        if stop.expired(shutdown) {
            break;
        }
        let stopping = shutdown.is_set();
        let between = s.is_idle();
        if stopping {
            // Between requests the connection ends, but only once a read
            // has found nothing: a request the client sent just before
            // (or one that waited in the pool's queue) is answered, with
            // `Connection: close`, instead of being reset unread.
            if between && quiet_since_stop {
                break;
            }
        } else if between && feed.others_waiting() {
            // The next response says `Connection: close`, so the client
            // learns of the close safely instead of racing an idle close.
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
                // An idle keep-alive connection yields its worker at once
                // when another connection is waiting. A fresh connection
                // does not: its request may be on the way.
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

/// A blocking socket as the drive loop uses it: its reads and writes wait
/// at most a TICK (said as WouldBlock, as is EINTR), and it reads once per
/// drive.
struct Blocking<'a> {
    stream: &'a TcpStream,
    /// The next read takes what has arrived and does not wait.
    read_now: bool,
    /// This drive has read.
    read: bool,
    /// Why the last read returned nothing: it waited its tick, or a signal
    /// came.
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
    /// Whether this worker may stop the listener for everyone: true when
    /// it is this model's own; false in a forked worker, whose shared
    /// listener only the parent closes (a worker told to stop alone must
    /// not stop the server).
    owns_listener: bool,
    /// Connections open in this worker, served and waiting: the server's
    /// connection limit (per process for prefork).
    limit: ConnLimit,
    /// Connections taken from the backlog while the one being served
    /// stalled, oldest first, each stamped with when it was accepted.
    /// Their clocks run while they wait, so a backlog of slow clients
    /// expires together and is shed at once, where from the kernel's
    /// backlog each would reach the worker with a whole timeout ahead of
    /// it. Still served one at a time, in arrival order.
    waiting: RefCell<VecDeque<Accepted>>,
    shutdown: &'a Shutdown,
}

impl Serial<'_> {
    /// The oldest connection waiting, else the next from the listener;
    /// None once shutdown begins. Connections still waiting then are
    /// closed unread, as those left in the kernel's backlog are reset
    /// when the listener is shut: only the one being served gets the
    /// shutdown grace.
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

/// Accepts and serves one connection at a time until shutdown: the whole
/// of a serial model, and the loop each forked worker runs. The listener must
/// be non-blocking. With `owns_listener`, shutdown closes it at once, even
/// mid-connection.
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

/// Whether the connection's deadline has passed. A body is judged on its
/// average rate counting what waits unread in the socket: an upload that
/// queued for this worker filled its receive buffer meanwhile, and is not
/// cut for bytes this worker has yet to read.
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

/// Decodes and answers what the input holds, running the handlers'
/// blocking work (hashing, writes, fsync, rename) right here: this thread serves
/// this one connection, so nothing else waits on it.
pub fn process_inline(s: &mut Session, app: &App) {
    s.process(app);
    while let Some(task) = s.take_task() {
        s.complete(task.run());
        s.process(app);
    }
}

/// When shutdown was first seen by this connection, to bound its exit.
struct StopClock<'a> {
    grace: Duration,
    seen: Option<Instant>,
    feed: &'a dyn Feed,
}

impl<'a> StopClock<'a> {
    fn new(grace: Duration, feed: &'a dyn Feed) -> Self {
        StopClock {
            grace,
            seen: None,
            feed,
        }
    }

    /// True once shutdown has been set for longer than the grace period.
    /// Asked after every read and write, so the first sight of shutdown
    /// (a signal interrupts them) stops accepting at once.
    fn expired(&mut self, shutdown: &Shutdown) -> bool {
        if !shutdown.is_set() {
            return false;
        }
        let seen = *self.seen.get_or_insert_with(|| {
            self.feed.stop_accepting();
            Instant::now()
        });
        seen.elapsed() >= self.grace
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
