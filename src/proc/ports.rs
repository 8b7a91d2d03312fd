//! Finding free loopback ports and waiting for a server to accept.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use super::child::ChildServer;

/// A loopback port that was free a moment ago. For servers that cannot
/// bind port 0 and report it (nginx, student servers); the caller retries
/// if another process takes it first.
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Why a started server never accepted a connection.
#[derive(Debug)]
pub enum NotAccepting {
    /// Nothing accepted within the limit.
    TimedOut,
    /// The process ended first: waiting on would only waste the limit.
    Exited(ExitStatus),
    /// The user asked to stop (Ctrl-C).
    Stopped,
}

/// Waits until `addr` accepts a TCP connection, up to `limit`, giving up
/// at once when `server` exits or `stop` says so.
pub fn wait_accepting(
    addr: SocketAddr,
    limit: Duration,
    server: &mut ChildServer,
    stop: &dyn Fn() -> bool,
) -> Result<(), NotAccepting> {
    let until = Instant::now() + limit;
    loop {
        if stop() {
            return Err(NotAccepting::Stopped);
        }
        if let Some(status) = server.exited() {
            return Err(NotAccepting::Exited(status));
        }
        // Loopback refuses at once when nothing listens; the timeout only
        // matters for a listener whose backlog is full.
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if Instant::now() >= until {
            return Err(NotAccepting::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
