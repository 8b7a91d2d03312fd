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

/// How long a new connection may stay silent. TCP_DEFER_ACCEPT has
/// already held it for about a second in the kernel; 3 s more covers a
/// request lost twice (retransmitted after 1 s, then 2 s: RFC 6298's
/// initial RTO, doubled). A blocking worker is freed that soon.
pub const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(3);
/// Time a request head gets before the minimum rate can extend it.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The most time a request head gets, however fast it keeps coming
/// (mod_reqtimeout's `header=20-40`: twice the base).
pub const HEADER_TIMEOUT_MAX: Duration = Duration::from_secs(20);
/// Keep-alive time between requests.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// Window over which a request body must arrive at `MIN_BODY_RATE`: also
/// the longest pause a body may take.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Window over which a response must be taken at `MIN_SEND_RATE`: also
/// the longest a reader may take nothing (nginx's `send_timeout` is 60 s).
pub const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes per second a slow head earns one more second for, and the least
/// a body must average per window and a reader must take (mod_reqtimeout's
/// `MinRate=500`).
pub const MIN_RATE: u64 = 500;

/// Per-connection limits a server can configure.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Default body limit; a handler may raise or lower it per request.
    pub max_body: u64,
    /// Time a new connection may take to send its first byte.
    pub first_byte_timeout: Duration,
    /// Time allowed to receive a complete request head once it has started
    /// (for a connection's first request: once it was accepted).
    pub header_timeout: Duration,
    /// The header timeout extended by `min_header_rate` stops here.
    pub header_timeout_max: Duration,
    /// Each this many bytes of a head earn it one second more (0: none).
    pub min_header_rate: u64,
    /// Time an idle keep-alive connection is kept open.
    pub idle_timeout: Duration,
    /// A body must arrive at `min_body_rate` over every window this long.
    pub body_timeout: Duration,
    /// Bytes per second a body must average over each `body_timeout`, and
    /// over its request's whole life after a grace of `header_timeout`.
    pub min_body_rate: u64,
    /// A response must be taken at `min_send_rate` over every window this
    /// long.
    pub send_timeout: Duration,
    /// Bytes per second a reader must average over each `send_timeout`.
    pub min_send_rate: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: DEFAULT_MAX_BODY,
            first_byte_timeout: FIRST_BYTE_TIMEOUT,
            header_timeout: HEADER_TIMEOUT,
            header_timeout_max: HEADER_TIMEOUT_MAX,
            min_header_rate: MIN_RATE,
            idle_timeout: IDLE_TIMEOUT,
            body_timeout: BODY_TIMEOUT,
            min_body_rate: MIN_RATE,
            send_timeout: SEND_TIMEOUT,
            min_send_rate: MIN_RATE,
        }
    }
}
