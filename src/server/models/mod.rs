//! The concurrency models' code, one file each; this maps each entry of the
//! registry (`catalog::models`, which names and describes them) to its `run`.

pub mod async_tasks;
pub mod event_loop;
pub mod io_uring;
pub mod iterative;
pub mod prefork;
pub mod thread_per_conn;
pub mod thread_pool;

use std::net::TcpListener;

use super::{Ready, ServerConfig, Shutdown};
pub use crate::catalog::models::Model;

/// Runs the configured model until shutdown, calling `ready` once with its
/// workers: once started for the pool and per-listener models, before `run`
/// for the rest (so prefork's output is flushed before any child exists).
pub fn run(
    listener: TcpListener,
    cfg: &ServerConfig,
    shutdown: &Shutdown,
    ready: Ready<'_>,
) -> anyhow::Result<()> {
    type Run = fn(TcpListener, &ServerConfig, &Shutdown) -> anyhow::Result<()>;
    let run: Run = match cfg.model {
        Model::ThreadPool => return thread_pool::run(listener, cfg, shutdown, ready),
        Model::IoUring => return io_uring::run(listener, cfg, shutdown, ready),
        Model::Reactors => return event_loop::run_reactors(listener, cfg, shutdown, ready),
        Model::AsyncLocal => return async_tasks::run_local(listener, cfg, shutdown, ready),
        Model::Iterative => iterative::run,
        Model::ThreadPerConn => thread_per_conn::run,
        Model::Prefork => prefork::run,
        Model::EventLoop => event_loop::run,
        Model::Async => async_tasks::run,
    };
    ready(cfg.workers, "")?;
    run(listener, cfg, shutdown)
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
        let stack = format!("{} KiB", crate::server::blocking::STACK_SIZE / 1024);
        assert!(about(Model::ThreadPerConn).contains(&stack));
        let idle = format!("{} s", super::thread_pool::IDLE_EXIT.as_secs());
        assert!(about(Model::ThreadPool).contains(&idle));
        let reads = format!("{} reads", crate::server::driver::READS_PER_TURN);
        assert!(about(Model::EventLoop).contains(&reads));
        let scratch = format!("{} KiB", crate::server::driver::SCRATCH / 1024);
        assert!(about(Model::EventLoop).contains(&scratch));
        let reads = format!("{} reads", crate::server::driver::READS_PER_TURN);
        assert!(about(Model::Async).contains(&reads));
        let offload = format!(
            "{} offload threads",
            crate::server::offload::OFFLOAD_THREADS
        );
        for m in [Model::Async, Model::AsyncLocal, Model::IoUring] {
            assert!(about(m).contains(&offload), "{m:?}");
        }
        let bufs = format!(
            "{} buffers of {} KiB",
            super::io_uring::RECV_BUFS,
            super::io_uring::RECV_BUF_SIZE / 1024
        );
        assert!(about(Model::IoUring).contains(&bufs));
        assert!(about(Model::IoUring).contains(&tick));
        let held = format!("{} KiB of input", super::io_uring::HELD_MAX / 1024);
        assert!(about(Model::IoUring).contains(&held));
    }
}
