//! What a model is given to serve: the model, its workers, the protocol
//! limits, connection and shutdown settings, and the handlers' `App`.

use std::sync::Arc;
use std::time::Duration;

use super::handlers::App;
use crate::catalog::models::Model;
use crate::http::Limits;

/// Everything a model needs to serve.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub model: Model,
    /// Threads, processes or reactors, by model; 0 means the model's default
    /// (for thread-pool: a pool that grows on demand).
    pub workers: usize,
    /// One copy that every connection's state points to.
    pub limits: Arc<Limits>,
    /// Most connections open at once (per process for prefork); more wait
    /// in the listen queue.
    pub max_connections: usize,
    /// How long in-flight work may take to finish after shutdown starts.
    pub shutdown_grace: Duration,
    /// Listen with TCP_DEFER_ACCEPT (see `bind`).
    pub defer_accept: bool,
    pub app: Arc<App>,
}

impl ServerConfig {
    pub fn new(model: Model, mut app: App) -> Self {
        app.may_block = model.serves_blocking();
        ServerConfig {
            model,
            workers: model.workers(None),
            limits: Arc::new(Limits::default()),
            max_connections: 10_000,
            shutdown_grace: Duration::from_secs(30),
            defer_accept: true,
            app: Arc::new(app),
        }
    }
}
