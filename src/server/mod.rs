//! The HTTP server: configuration, binding, and the concurrency models,
//! each driving the same `Session` through the same entry point.

pub mod accept;
pub mod blocking;
mod config;
pub mod handlers;
mod listen;
pub mod models;
pub mod offload;
pub mod outq;
pub mod session;
pub mod shutdown;
mod sockopt;
pub mod task;

use std::net::TcpListener;

pub use config::ServerConfig;
pub use handlers::App;
pub use listen::{bind, LISTEN_BACKLOG};
pub use models::Model;
pub use shutdown::{wait_drained, Shutdown};

/// Runs the configured model until shutdown.
pub fn run(listener: TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    models::run(listener, cfg, shutdown)
}
