//! Buffers a worker lends the connection it is serving, so that a request
//! is copied in and parsed in memory the cache still holds
//! (`ServerConn::swap_warm`).
//!
//! Why: with many connections each one's own receive buffer and head
//! buffers are out of the cache by the time its next request comes, and
//! the stores that fill them wait for memory. One set per worker, lent to
//! each connection in turn, is warm.

use crate::http::request::HeadBuffers;

/// A worker's receive buffer and head buffers.
#[derive(Debug, Default)]
pub struct Warm {
    pub(super) buf: Vec<u8>,
    pub(super) head: HeadBuffers,
}
