//! The listening socket every model accepts from: backlog, SO_REUSEPORT
//! for sibling listeners, TCP_NODELAY inherited by accepted sockets, and
//! TCP_DEFER_ACCEPT; and the sibling listeners of the models with one
//! listener per worker.

use std::net::{SocketAddr, TcpListener};

use socket2::{Domain, Protocol, Socket, Type};

use super::sockopt;
use super::ServerConfig;

/// Listen backlog: E1 and E3 open 1,000 and 10,000 connections at once,
/// and an iterative server must be able to leave them queued, not refused.
/// The kernel caps it at net.core.somaxconn.
pub const LISTEN_BACKLOG: i32 = 65535;

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

/// `listener` and `n - 1` more bound to its address with SO_REUSEPORT,
/// so the kernel spreads connections over the workers and no lock is
/// shared; errors say which `model` asked.
pub fn reuseport_listeners(
    listener: TcpListener,
    n: usize,
    cfg: &ServerConfig,
    model: &str,
) -> anyhow::Result<Vec<TcpListener>> {
    let addr = listener.local_addr()?;
    let mut listeners = vec![listener];
    for _ in 1..n {
        listeners.push(bind(addr, true, cfg.defer_accept).map_err(|e| {
            anyhow::anyhow!("{model}: cannot open another SO_REUSEPORT listener on {addr}: {e}")
        })?);
    }
    Ok(listeners)
}
