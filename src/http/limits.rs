//! Every bound on what a peer can make us buffer, named once.

use std::time::Duration;

/// Longest request line accepted; longer ones get 414. Lines of 8,000 octets
/// (the RFC 9112 recommendation) must fit.
pub const MAX_REQUEST_LINE: usize = 8 * 1024;
/// Largest header section (request line excluded); larger ones get 431.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Most header fields in one request; more get 431.
pub const MAX_HEADERS: usize = 100;
/// Most header fields in one response the load generator accepts; more
/// fail the request as a head too large. Servers behind proxies and CDNs
/// send well over 100 (security headers, cookies, tracing), and a load
/// generator that fails them measures itself, not the server.
pub const MAX_RESPONSE_HEADERS: usize = 256;
/// Longest chunk-size line including extensions; longer ones get 400.
pub const MAX_CHUNK_LINE: usize = 4 * 1024;
/// Largest trailer section after the last chunk; larger ones get 431.
pub const MAX_TRAILER_BYTES: usize = 64 * 1024;
/// Default request body limit for bodies the server buffers (e.g. `/echo`).
pub const DEFAULT_MAX_BODY: u64 = 8 * 1024 * 1024;
/// Largest read buffer a connection grows to while reading a head: the
/// longest request line and header section, and room for their line ends.
pub const MAX_HEAD_BUFFER: usize = MAX_REQUEST_LINE + MAX_HEADER_BYTES + 1024;
/// Largest read buffer a connection grows to while streaming a body.
pub const MAX_READ_BUFFER: usize = 256 * 1024;
/// First read buffer size: small, because most requests are a few hundred
/// bytes and 10,000 idle connections should not pin 10,000 large buffers.
pub const INITIAL_READ_BUFFER: usize = 4 * 1024;

/// Per-connection limits a server can configure.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Default body limit; a handler may raise or lower it per request.
    pub max_body: u64,
    /// Time allowed to receive a complete request head once it has started.
    pub header_timeout: Duration,
    /// Time an idle keep-alive connection is kept open.
    pub idle_timeout: Duration,
    /// Longest gap between two reads of a request body.
    pub body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: DEFAULT_MAX_BODY,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(5),
            body_timeout: Duration::from_secs(30),
        }
    }
}
