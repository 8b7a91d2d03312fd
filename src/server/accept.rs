//! Accepting connections without spinning or dying: shutdown-aware waits,
//! a max-connections bound, back-off on EMFILE and friends, and closing
//! the listener the moment shutdown begins.

use std::collections::VecDeque;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags};

use super::shutdown::{poll_timeout, Shutdown, TICK};

/// How long to stop accepting after running out of descriptors or memory:
/// retrying at once would spin at 100% CPU while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Counts open connections against the configured maximum.
#[derive(Debug, Clone)]
pub struct ConnLimit {
    active: Arc<AtomicUsize>,
    max: usize,
}

/// Held for the life of a connection; releases its slot when dropped.
#[derive(Debug)]
pub struct ConnSlot(Arc<AtomicUsize>);

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ConnLimit {
    pub fn new(max: usize) -> Self {
        ConnLimit {
            active: Arc::new(AtomicUsize::new(0)),
            max: max.max(1),
        }
    }

    pub fn active(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }

    pub fn is_full(&self) -> bool {
        self.active() >= self.max
    }

    /// Takes a slot; the caller has checked `is_full`, and a slight
    /// overshoot from a race between workers is harmless.
    pub fn take(&self) -> ConnSlot {
        self.active.fetch_add(1, Ordering::AcqRel);
        ConnSlot(Arc::clone(&self.active))
    }
}

/// What every model does after accept(2) failed (other than for want of
/// a connection): None, take the next at once (that one connection was
/// aborted, or a signal came); else pause this long before accepting
/// again (out of descriptors or memory, which retrying at once would spin
/// on), saying on stderr what is not such a passing shortage.
pub fn after_error(e: &io::Error) -> Option<Duration> {
    if matches!(
        e.kind(),
        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
    ) {
        return None;
    }
    if !is_transient(e) {
        eprintln!("loadlab: accept failed: {e}");
    }
    Some(ACCEPT_BACKOFF)
}

/// Whether an accept error is a passing resource shortage (back off and
/// retry) rather than something about the listener itself.
fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::EMFILE
                | libc::ENFILE
                | libc::ENOBUFS
                | libc::ENOMEM
                | libc::ECONNABORTED
                | libc::EPROTO
                | libc::EPERM
        )
    ) || matches!(
        e.kind(),
        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
    )
}

/// Waits until the listener has a connection to accept, for at most `timeout`.
/// A listener shut by `stop_listening` polls as hung up (and readable):
/// nothing waits there, so a worker does not give up its keep-alive
/// connection for it.
pub fn readable(listener: &TcpListener, timeout: Duration) -> bool {
    let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
    if !matches!(poll(&mut fds, poll_timeout(timeout)), Ok(n) if n > 0) {
        return false;
    }
    fds[0]
        .revents()
        .is_some_and(|r| r.contains(PollFlags::POLLIN) && !r.contains(PollFlags::POLLHUP))
}

/// Waits up to `timeout` for the listener or for shutdown, whichever
/// comes first, so shutdown is seen at once rather than a TICK later.
/// True if shutdown began: in a prefork worker, its master's (the wake-up
/// descriptor is inherited), before the worker's own signal arrives.
fn wait(listener: &TcpListener, shutdown: &Shutdown, timeout: Duration) -> bool {
    let Some(wake) = shutdown.wake_fd() else {
        readable(listener, timeout);
        return false;
    };
    let mut fds = [
        PollFd::new(listener.as_fd(), PollFlags::POLLIN),
        PollFd::new(wake, PollFlags::POLLIN),
    ];
    let _ = poll(&mut fds, poll_timeout(timeout));
    fds[1].any().unwrap_or(false)
}

/// Stops listening now, for every process that shares the socket:
/// connections that arrive later are refused (RST) instead of waiting in
/// a backlog that nobody will accept from, and those already queued are
/// reset at once instead of when the last descriptor closes (after the
/// in-flight work drains). Safe to call more than once.
pub fn stop_listening(listener: &TcpListener) {
    let _ = socket2::SockRef::from(listener).shutdown(std::net::Shutdown::Read);
}

/// accept(2) on a socket that no longer listens: prefork's master shut the
/// listener all its workers share.
fn stopped_listening(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EINVAL)
}

/// A connection just accepted, its slot, and when: its deadlines run from
/// then, however long it waits for a worker.
pub type Accepted = (TcpStream, ConnSlot, Instant);

/// Accepts the next connection on a non-blocking listener, waiting in
/// TICK steps; None once shutdown is set or the listener was shut.
/// Respects the connection limit.
pub fn next(listener: &TcpListener, limit: &ConnLimit, shutdown: &Shutdown) -> Option<Accepted> {
    loop {
        if shutdown.is_set() {
            return None;
        }
        if limit.is_full() {
            shutdown.sleep(Duration::from_millis(5));
            continue;
        }
        match accept_one(listener, limit) {
            Ok(accepted) => return Some(accepted),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if wait(listener, shutdown, TICK) {
                    return None;
                }
            }
            Err(e) if stopped_listening(&e) => return None,
            Err(e) => {
                if let Some(pause) = after_error(&e) {
                    shutdown.sleep(pause);
                }
            }
        }
    }
}

/// One accept(2) on a non-blocking listener: the connection blocking (its
/// reads and writes wait, with timeouts), its slot taken, its clock
/// started.
fn accept_one(listener: &TcpListener, limit: &ConnLimit) -> io::Result<Accepted> {
    let (stream, _) = listener.accept()?;
    let _ = stream.set_nonblocking(false);
    Ok((stream, limit.take(), Instant::now()))
}

/// Accepts every connection waiting in the listener's backlog, up to the
/// connection limit, onto the end of `waiting`, without waiting for more;
/// returns how many. A serial worker calls this when the connection it
/// serves stalls: the kernel's backlog runs no clock, so a connection
/// waiting there would reach the worker with its whole timeout ahead of
/// it, while one accepted here is judged from now. Any error (the backlog
/// is empty, descriptors ran out, the listener was shut) ends the round:
/// what is left waits in the kernel for `next`, which handles each error.
pub fn take_backlog(
    listener: &TcpListener,
    limit: &ConnLimit,
    waiting: &mut VecDeque<Accepted>,
) -> usize {
    let mut taken = 0;
    while !limit.is_full() {
        match accept_one(listener, limit) {
            Ok(accepted) => {
                waiting.push_back(accepted);
                taken += 1;
            }
            // A connection reset while queued: the next may be fine.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                ) => {}
            Err(_) => break,
        }
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Taking the backlog takes what is waiting, up to the connection
    /// limit, stamped in arrival order, and does not wait for more.
    #[test]
    fn take_backlog_takes_what_waits_up_to_the_limit_without_waiting() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let _clients: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
        // Connected clients reach the accept queue with the handshake.
        std::thread::sleep(Duration::from_millis(50));
        let limit = ConnLimit::new(2);
        let mut waiting = VecDeque::new();
        let t0 = Instant::now();
        assert_eq!(take_backlog(&listener, &limit, &mut waiting), 2);
        assert_eq!(limit.active(), 2);
        assert!(waiting[0].2 <= waiting[1].2);
        waiting.pop_front();
        assert_eq!(take_backlog(&listener, &limit, &mut waiting), 1);
        assert_eq!(take_backlog(&listener, &limit, &mut waiting), 0);
        assert!(t0.elapsed() < TICK, "it waited");
    }
}
