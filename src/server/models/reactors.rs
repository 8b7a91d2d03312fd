//! N event loops, each in its own thread with its own SO_REUSEPORT
//! listener, so the kernel spreads connections and no lock is shared
//! (nginx's `reuseport` layout).

use std::net::TcpListener;

use super::event_loop;
use crate::server::offload::Offload;
use crate::server::{bind, ServerConfig, Shutdown};

pub fn run(listener: TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    let n = cfg.workers.max(1);
    let listeners = reuseport_listeners(listener, n, cfg, "reactors")?;
    let per_loop = (cfg.max_connections / n).max(1);
    // One pool for all reactors: file work is bounded by the disk, not by
    // how many loops share it.
    let offload = Offload::start()
        .map_err(|e| anyhow::anyhow!("reactors: cannot start the offload threads: {e}"))?;
    let offload = &offload;
    on_threads(listeners, "reactors", "reactor", shutdown, |l| {
        event_loop::run_loop(l, cfg, per_loop, offload, shutdown)
    })
}

/// `listener` and `n - 1` more bound to its address with SO_REUSEPORT.
pub(super) fn reuseport_listeners(
    listener: TcpListener,
    n: usize,
    cfg: &ServerConfig,
    model: &str,
) -> anyhow::Result<Vec<TcpListener>> {
    let addr = listener.local_addr()?;
    let mut listeners = vec![listener];
    for _ in 1..n {
        listeners.push(bind(addr, true, cfg.defer_accept).map_err(|e| {
            anyhow::anyhow!("{model}: cannot open another SO_REUSEPORT listener on {addr}: {e}")
        })?);
    }
    Ok(listeners)
}

/// Runs `serve` on each listener in a thread of its own (named `name-i`)
/// until all return; errors say which `model` they come from. One that fails, or a thread that cannot start,
/// stops them all: its share of connections would go to a dead listener.
pub(super) fn on_threads<F>(
    listeners: Vec<TcpListener>,
    model: &str,
    name: &str,
    shutdown: &Shutdown,
    serve: F,
) -> anyhow::Result<()>
where
    F: Fn(TcpListener) -> anyhow::Result<()> + Sync,
{
    let n = listeners.len();
    let serve = &serve;
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        let mut not_started = None;
        for (i, l) in listeners.into_iter().enumerate() {
            let spawned = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn_scoped(scope, move || {
                    let r = serve(l);
                    if r.is_err() {
                        // One down (e.g. no descriptor left for its epoll)
                        // would leave a share of connections to a dead
                        // listener: stop them all and report it.
                        shutdown.trigger();
                    }
                    r
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Likewise one that never started: the ones running
                    // stop, and the server reports why.
                    shutdown.trigger();
                    not_started = Some(anyhow::anyhow!(
                        "{model}: cannot start {name} {} of {n}: {e}",
                        i + 1
                    ));
                    break;
                }
            }
        }
        let joined = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("{model}: a {name} thread panicked")))
            })
            .collect::<anyhow::Result<Vec<()>>>();
        match not_started {
            Some(e) => Err(e),
            None => joined.map(drop),
        }
    })
}
