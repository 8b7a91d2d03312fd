//! The concurrency models. Each is one small file with the same entry,
//! `run(listener, &ServerConfig, &Shutdown)`.

pub mod event_loop;
pub mod iterative;
pub mod prefork;
pub mod reactors;
pub mod thread_per_conn;
pub mod thread_pool;

use std::net::TcpListener;

use super::{ServerConfig, Shutdown};
pub use crate::results::models::Model;

pub fn run(listener: TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    match cfg.model {
        Model::Iterative => iterative::run(listener, cfg, shutdown),
        Model::ThreadPerConn => thread_per_conn::run(listener, cfg, shutdown),
        Model::ThreadPool => thread_pool::run(listener, cfg, shutdown),
        Model::Prefork => prefork::run(listener, cfg, shutdown),
        Model::EventLoop => event_loop::run(listener, cfg, shutdown),
        Model::Reactors => reactors::run(listener, cfg, shutdown),
    }
}
