//! The HTTP server: configuration, binding, and the six concurrency models,
//! each driving the same `Session` through the same entry point.

pub mod accept;
pub mod blocking;
pub mod handlers;
pub mod models;
pub mod outq;
pub mod session;
pub mod shutdown;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

pub use handlers::App;
pub use models::Model;
pub use shutdown::Shutdown;

use crate::http::Limits;

/// Listen backlog: E1 and E3 open 1,000 and 10,000 connections at once,
/// and an iterative server must be able to leave them queued, not refused.
/// The kernel caps it at net.core.somaxconn.
pub const LISTEN_BACKLOG: i32 = 65535;

/// Everything a model needs to serve.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub model: Model,
    /// Threads, processes or reactors, by model; 0 means the model's default
    /// (for thread-pool: a pool that grows on demand).
    pub workers: usize,
    pub limits: Limits,
    /// Most connections open at once (per process for prefork); more wait
    /// in the listen queue.
    pub max_connections: usize,
    /// How long in-flight work may take to finish after shutdown starts.
    pub shutdown_grace: Duration,
    pub app: Arc<App>,
}

impl ServerConfig {
    pub fn new(model: Model, app: App) -> Self {
        ServerConfig {
            model,
            workers: model.default_workers(),
            limits: Limits::default(),
            max_connections: 10_000,
            shutdown_grace: Duration::from_secs(30),
            app: Arc::new(app),
        }
    }
}

/// Binds a listening socket. `reuseport` sets SO_REUSEPORT before binding
/// so that further listeners (one per reactor) can share the address.
pub fn bind(addr: SocketAddr, reuseport: bool) -> std::io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    // Accepted sockets inherit TCP_NODELAY from the listener on Linux, so
    // it is set once here instead of once per connection (a syscall per
    // request when every request has its own connection).
    socket.set_nodelay(true)?;
    if reuseport {
        socket.set_reuse_port(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    Ok(socket.into())
}

/// Runs the configured model until shutdown.
pub fn run(listener: TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    models::run(listener, cfg, shutdown)
}

/// Waits until `done` says all work finished or the grace period passed.
pub(crate) fn wait_drained(grace: Duration, done: impl Fn() -> bool) {
    let until = Instant::now() + grace;
    while !done() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}
