//! One connection at a time, in the calling thread.

use std::net::TcpListener;
use std::time::Duration;

use crate::server::accept::{self, ConnLimit};
use crate::server::{blocking, ServerConfig, Shutdown};

pub fn run(listener: TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    listener.set_nonblocking(true)?;
    serve_serially(&listener, cfg, shutdown);
    Ok(())
}

/// Accepts and serves one connection at a time until shutdown: the whole
/// of this model, and the loop each prefork worker runs. The listener must
/// be non-blocking.
pub fn serve_serially(listener: &TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) {
    let limit = ConnLimit::new(1);
    let waiting = || accept::readable(listener, Duration::ZERO);
    while let Some((stream, _slot)) = accept::next(listener, &limit, shutdown) {
        blocking::serve(
            stream,
            &cfg.app,
            &cfg.limits,
            shutdown,
            cfg.shutdown_grace,
            &waiting,
        );
    }
}
