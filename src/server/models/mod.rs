//! The concurrency models' code: one small file per model with the same
//! entry, `run(listener, &ServerConfig, &Shutdown)`. What a model is called,
//! how it is described and its worker rules live in the registry
//! (`results::models`); this module maps each registry entry to its `run`.

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

#[cfg(test)]
mod tests {
    use super::Model;
    use crate::server::shutdown::TICK;

    /// The registry sits below the server and cannot read its constants, so
    /// the numbers its descriptions quote are held to them here.
    #[test]
    fn descriptions_quote_the_constants_the_code_uses() {
        let about = |m: Model| m.info().about;
        let tick = format!("{} ms", TICK.as_millis());
        assert!(about(Model::Iterative).contains(&tick));
        let stack = format!("{} KiB", super::thread_per_conn::STACK_SIZE / 1024);
        assert!(about(Model::ThreadPerConn).contains(&stack));
        let idle = format!("{} s", super::thread_pool::IDLE_EXIT.as_secs());
        assert!(about(Model::ThreadPool).contains(&idle));
        let reads = format!("{} reads", super::event_loop::READS_PER_TURN);
        assert!(about(Model::EventLoop).contains(&reads));
        let scratch = format!("{} KiB", super::event_loop::SCRATCH / 1024);
        assert!(about(Model::EventLoop).contains(&scratch));
    }
}
