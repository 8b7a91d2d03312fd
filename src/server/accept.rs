//! Accepting connections without spinning or dying: shutdown-aware waits,
//! a max-connections bound, and back-off on EMFILE and friends.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::shutdown::{Shutdown, TICK};

/// How long to stop accepting after running out of descriptors or memory:
/// retrying at once would spin at 100% CPU while the condition lasts.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

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

/// Whether an accept error is a passing resource shortage (back off and
/// retry) rather than something about the listener itself.
pub fn is_transient(e: &io::Error) -> bool {
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
pub fn readable(listener: &TcpListener, timeout: Duration) -> bool {
    let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
    let ms = PollTimeout::try_from(timeout.as_millis() as i32).unwrap_or(PollTimeout::ZERO);
    matches!(poll(&mut fds, ms), Ok(n) if n > 0)
}

/// Accepts the next connection on a non-blocking listener, waiting in
/// TICK steps; None once shutdown is set. Respects the connection limit.
pub fn next(
    listener: &TcpListener,
    limit: &ConnLimit,
    shutdown: &Shutdown,
) -> Option<(TcpStream, ConnSlot)> {
    loop {
        if shutdown.is_set() {
            return None;
        }
        if limit.is_full() {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                return Some((stream, limit.take()));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                readable(listener, TICK);
            }
            Err(e) if is_transient(&e) => {
                if !matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                ) {
                    std::thread::sleep(ACCEPT_BACKOFF);
                }
            }
            Err(e) => {
                eprintln!("loadlab: accept failed: {e}");
                std::thread::sleep(ACCEPT_BACKOFF);
            }
        }
    }
}
