//! One connection at a time, in the calling thread.

use std::net::TcpListener;
use std::time::Duration;

use crate::server::accept::{self, ConnLimit};
use crate::server::blocking::{self, Feed};
use crate::server::{ServerConfig, Shutdown};

pub fn run(listener: TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    listener.set_nonblocking(true)?;
    serve_serially(&listener, cfg, shutdown, true);
    Ok(())
}

/// The listener a serial worker accepts from.
struct Serial<'a> {
    listener: &'a TcpListener,
    /// Whether this worker may stop the listener for everyone: true when
    /// it is this model's own; false in a forked worker, whose shared
    /// listener only the parent closes (a worker told to stop alone must
    /// not stop the server).
    owns_listener: bool,
}

impl Feed for Serial<'_> {
    fn others_waiting(&self) -> bool {
        accept::readable(self.listener, Duration::ZERO)
    }

    fn stop_accepting(&self) {
        if self.owns_listener {
            accept::stop_listening(self.listener);
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
    let limit = ConnLimit::new(1);
    let feed = Serial {
        listener,
        owns_listener,
    };
    while let Some((stream, _slot, accepted)) = accept::next(listener, &limit, shutdown) {
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
