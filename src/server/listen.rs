//! The listening socket every model accepts from (backlog, SO_REUSEPORT,
//! TCP_NODELAY, TCP_DEFER_ACCEPT), and the sibling listeners of models
//! with one listener per worker.

use std::net::{SocketAddr, TcpListener};

use socket2::{Domain, Protocol, Socket, Type};

use super::sockopt;
use super::ServerConfig;

/// Listen backlog: a burst of connections must queue, not be refused, for
/// an iterative server. The kernel caps it at net.core.somaxconn.
pub const LISTEN_BACKLOG: i32 = 65535;

/// How long (seconds) the kernel holds a silent connection before handing
/// it to accept anyway (rounded up to a SYN-ACK retransmission).
const DEFER_ACCEPT_SECS: libc::c_int = 1;

/// Binds a listener; `reuseport` lets sibling listeners share the address,
/// `defer` sets TCP_DEFER_ACCEPT so accept returns only once the request
/// is in, saving a wake-up and keeping silent clients off the workers.
pub fn bind(addr: SocketAddr, reuseport: bool, defer: bool) -> std::io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    // Accepted sockets inherit TCP_NODELAY from the listener on Linux, so
    // it is set once here rather than per connection.
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

/// `listener` plus `n - 1` more on its address with SO_REUSEPORT, so the
/// kernel spreads connections over the workers; errors name `model`.
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
