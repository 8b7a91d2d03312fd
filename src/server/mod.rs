//! The HTTP server: configuration, binding, and the concurrency models,
//! each driving the same `Session` through the same entry point.

pub mod accept;
pub mod blocking;
pub mod handlers;
pub mod models;
pub mod outq;
pub mod session;
pub mod shutdown;
mod sockopt;

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
    /// Listen with TCP_DEFER_ACCEPT (see `bind`).
    pub defer_accept: bool,
    pub app: Arc<App>,
}

impl ServerConfig {
    pub fn new(model: Model, app: App) -> Self {
        ServerConfig {
            model,
            workers: model.workers(None),
            limits: Limits::default(),
            max_connections: 10_000,
            shutdown_grace: Duration::from_secs(30),
            defer_accept: true,
            app: Arc::new(app),
        }
    }
}

/// How long (seconds) the kernel holds a connection whose client has sent
/// nothing before handing it to accept anyway (rounded up to a SYN-ACK
/// retransmission, about one second).
const DEFER_ACCEPT_SECS: libc::c_int = 1;

/// Binds a listening socket. `reuseport` sets SO_REUSEPORT before binding
/// so that further listeners (one per reactor) can share the address.
/// `defer` sets TCP_DEFER_ACCEPT (nginx's `deferred`, Apache httpd's
/// default on Linux): accept returns a connection once its request has
/// arrived, so the server is woken once per connection, not once for the
/// handshake and again for the request, and a client that connects and
/// says nothing ties up no worker until the deferral ends.
pub fn bind(addr: SocketAddr, reuseport: bool, defer: bool) -> std::io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    // Accepted sockets inherit TCP_NODELAY from the listener on Linux, so
    // it is set once here instead of once per connection (a syscall per
    // request when every request has its own connection).
    socket.set_nodelay(true)?;
    if reuseport {
        socket.set_reuse_port(true)?;
    }
    if defer {
        use std::os::fd::AsFd;
        sockopt::set_int(
            socket.as_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            DEFER_ACCEPT_SECS,
        )?;
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
