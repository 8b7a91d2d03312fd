//! Accepting connections: shutdown-aware waits, a connection limit,
//! back-off on EMFILE and the like, and closing the listener at shutdown.

use std::collections::VecDeque;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags};

use super::shutdown::{poll_timeout, Shutdown, TICK};

/// Pause after running out of descriptors or memory; retrying at once
/// would spin while the shortage lasts.
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

    /// Takes a slot; callers check `is_full` first, and a small overshoot
    /// from racing workers is harmless.
    pub fn take(&self) -> ConnSlot {
        self.active.fetch_add(1, Ordering::AcqRel);
        ConnSlot(Arc::clone(&self.active))
    }
}

/// The pause before accepting again after accept(2) failed: None for one
/// aborted connection or a signal, else a back-off (logging any error
/// that is not a passing shortage).
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

/// Whether an accept error is a passing resource shortage rather than a
/// fault of the listener itself.
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

/// Waits up to `timeout` for a connection to accept. A listener shut by
/// `stop_listening` polls as hung up and counts as not readable, so a
/// worker does not give up its keep-alive connection for it.
pub fn readable(listener: &TcpListener, timeout: Duration) -> bool {
    let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
    if !matches!(poll(&mut fds, poll_timeout(timeout)), Ok(n) if n > 0) {
        return false;
    }
    fds[0]
        .revents()
        .is_some_and(|r| r.contains(PollFlags::POLLIN) && !r.contains(PollFlags::POLLHUP))
}

/// Waits up to `timeout` for the listener or for shutdown, so shutdown is
/// seen at once; true if it began (in a prefork worker, also the master's,
/// through the inherited wake-up descriptor).
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

/// Stops listening for every process sharing the socket, so new and
/// queued connections are reset now rather than after the drain. Safe to
/// call more than once.
pub fn stop_listening(listener: &TcpListener) {
    let _ = socket2::SockRef::from(listener).shutdown(std::net::Shutdown::Read);
}

/// accept(2) failed because prefork's master shut the shared listener.
fn stopped_listening(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EINVAL)
}

/// A connection, its slot, and when it was accepted: its deadlines run
/// from then, however long it waits for a worker.
pub type Accepted = (TcpStream, ConnSlot, Instant);

/// Accepts the next connection within the limit, waiting in TICK steps;
/// None once shutdown is set or the listener was shut.
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

/// One accept(2): the connection made blocking (its IO uses timeouts),
/// its slot taken and its clock started.
fn accept_one(listener: &TcpListener, limit: &ConnLimit) -> io::Result<Accepted> {
    let (stream, _) = listener.accept()?;
    let _ = stream.set_nonblocking(false);
    Ok((stream, limit.take(), Instant::now()))
}

/// Moves backlog connections onto `waiting` (up to the limit, no waiting)
/// for a stalled serial worker, so their deadlines start now: the kernel's
/// backlog runs no clock. Any error ends the round and is left to `next`.
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
