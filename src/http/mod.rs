//! Sans-IO HTTP/1.1: bytes in, events out; response heads encoded into buffers.
//!
//! Nothing in here touches a socket, a thread or a clock other than the cached
//! `Date` value, so every concurrency model drives the same code and tests can
//! feed it bytes one at a time.

pub mod chunked;
pub mod client;
pub mod conn;
pub mod date;
pub mod error;
pub mod framing;
pub mod head;
pub mod limits;
mod plain_head;
pub mod request;
pub mod response;
pub(crate) mod scan;
mod target;

pub use conn::{encode_streamed, Event, Phase, ServerConn, Warm};
pub use error::ProtoError;
pub use limits::Limits;
pub use request::{BodyLength, Method, RequestHead, Version};
