//! One connection at a time, in the calling thread.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::TcpListener;
use std::time::Duration;

use crate::server::accept::{self, Accepted, ConnLimit};
use crate::server::blocking::{self, Feed};
use crate::server::{ServerConfig, Shutdown};

pub fn run(listener: TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    listener.set_nonblocking(true)?;
    serve_serially(&listener, cfg, shutdown, true);
    Ok(())
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
/// of this model, and the loop each prefork worker runs. The listener must
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
        blocking::serve(
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
