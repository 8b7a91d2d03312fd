//! Protocol errors, each carrying the status code to answer with.

/// A request the server cannot accept. The connection answers `status` and
/// then closes, because after a framing error the byte stream can no longer
/// be trusted to delimit the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{status} {reason}")]
pub struct ProtoError {
    pub status: u16,
    pub reason: &'static str,
}

impl ProtoError {
    pub const fn new(status: u16, reason: &'static str) -> Self {
        ProtoError { status, reason }
    }
    pub const fn bad_request(reason: &'static str) -> Self {
        Self::new(400, reason)
    }
}
