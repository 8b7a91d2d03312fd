//! What the conformance groups share: an error answer that must close the
//! connection and leave the server alive, one request on a fresh
//! connection, and a GET's bytes.

use std::io::Write;
use std::time::Duration;

use crate::common::*;

/// How long a test waits for the server to close a connection it should
/// close: generous, so a loaded machine does not fail the suite.
pub const LONG: Duration = Duration::from_secs(5);

/// `b` as text for a failure message, cut to its first 200 bytes.
pub fn show(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    if s.len() > 200 {
        format!("{}... ({} bytes)", &s[..200], b.len())
    } else {
        s.into_owned()
    }
}

/// Sends `raw` on a fresh connection and expects `status`, a
/// `Connection: close`, the connection closed, and the server alive.
pub fn expect_error(server: &TestServer, raw: &[u8], status: u16) {
    let mut s = server.connect();
    write_ignoring_errors(&mut s, raw);
    let r = read_response(&mut s, false)
        .unwrap_or_else(|e| panic!("no response to {:?}: {e}", show(raw)));
    assert_eq!(
        r.status,
        status,
        "request {:?} answered {:?}",
        show(raw),
        show(&r.body)
    );
    assert_eq!(r.header("connection"), Some("close"), "{:?}", show(raw));
    assert!(
        is_closed(&mut s, LONG),
        "connection left open after {:?}",
        show(raw)
    );
    assert_alive(server);
}

/// Sends `raw` on a fresh connection and returns the first response.
pub fn one(server: &TestServer, raw: &[u8]) -> RawResponse {
    let mut s = server.connect();
    s.write_all(raw).unwrap();
    read_response(&mut s, raw.starts_with(b"HEAD "))
        .unwrap_or_else(|e| panic!("no response to {:?}: {e}", show(raw)))
}

/// A plain HTTP/1.1 GET of `path`.
pub fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").into_bytes()
}
