//! A new thread for every connection.

use std::net::TcpListener;
use std::sync::Arc;

use crate::server::accept::{self, ConnLimit};
use crate::server::{blocking, wait_drained, ServerConfig, Shutdown};

pub fn run(listener: TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    listener.set_nonblocking(true)?;
    let limit = ConnLimit::new(cfg.max_connections);
    while let Some((stream, slot, accepted)) = accept::next(&listener, &limit, shutdown) {
        let app = Arc::clone(&cfg.app);
        let limits = cfg.limits.clone();
        let shutdown = shutdown.clone();
        let grace = cfg.shutdown_grace;
        let spawned = std::thread::Builder::new()
            .name("conn".into())
            .stack_size(blocking::STACK_SIZE)
            .spawn(move || {
                let _slot = slot;
                blocking::serve(
                    stream,
                    accepted,
                    &app,
                    &limits,
                    &shutdown,
                    grace,
                    &blocking::Alone,
                );
            });
        if let Err(e) = spawned {
            // Out of threads: this connection is dropped, the server lives.
            eprintln!("loadlab: cannot start a connection thread: {e}");
        }
    }
    // Closed before the connections drain: clients arriving now are
    // refused at once instead of queueing for a reset.
    drop(listener);
    wait_drained(cfg.shutdown_grace, || limit.active() == 0);
    Ok(())
}
