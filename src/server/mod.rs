//! The HTTP server: configuration, binding, and the concurrency models,
//! each driving the same `Session` through the same entry point.

pub mod accept;
pub mod blocking;
mod config;
mod deadlines;
pub mod driver;
pub mod handlers;
pub mod linger;
mod listen;
pub mod loop_ctx;
pub mod models;
pub mod offload;
pub mod outq;
pub mod session;
pub mod shutdown;
mod sockopt;
pub mod task;
pub mod workers;

pub use config::ServerConfig;
pub use handlers::App;
pub use listen::{bind, reuseport_listeners, LISTEN_BACKLOG};
pub use models::{run, Model};
pub use shutdown::{wait_drained, Shutdown};

/// Called once a model's workers exist, with how many started (a pool may
/// start fewer than asked) and `key=value` words for `serve`'s start-up
/// line; an error stops the server before it serves.
pub type Ready<'a> = &'a mut dyn FnMut(usize, &str) -> anyhow::Result<()>;
