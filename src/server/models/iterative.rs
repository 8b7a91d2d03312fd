//! One connection at a time, in the calling thread.

use std::net::TcpListener;

use crate::server::blocking::serve_serially;
use crate::server::{ServerConfig, Shutdown};

pub fn run(listener: TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    listener.set_nonblocking(true)?;
    serve_serially(&listener, cfg, shutdown, true);
    Ok(())
}
