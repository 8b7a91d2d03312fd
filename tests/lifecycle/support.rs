//! What the lifecycle tests share: how long to wait, and one good request
//! on a fresh connection.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::common::*;

/// The bound on every wait for the server (to start serving, to answer,
/// to exit): generous, so a loaded machine does not fail the suite.
pub const WAIT: Duration = Duration::from_secs(10);

/// One GET on a fresh connection; true if it got a 200 with the full body.
pub fn good_request(server: &TestServer) -> bool {
    good_request_at(server.addr)
}

/// One GET on a fresh connection to `addr`, as `good_request`.
pub fn good_request_at(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(WAIT));
    if s.write_all(b"GET /500B.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    matches!(read_response(&mut s, false), Ok(r) if r.status == 200 && r.body.len() == 500)
}
