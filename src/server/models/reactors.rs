//! N event loops, each in its own thread with its own SO_REUSEPORT
//! listener, so the kernel spreads connections and no lock is shared
//! (nginx's `reuseport` layout).

use std::net::TcpListener;

use super::event_loop;
use crate::server::offload::Offload;
use crate::server::{bind, ServerConfig, Shutdown};

pub fn run(listener: TcpListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    let n = cfg.workers.max(1);
    let addr = listener.local_addr()?;
    let mut listeners = vec![listener];
    for _ in 1..n {
        listeners.push(bind(addr, true, cfg.defer_accept).map_err(|e| {
            anyhow::anyhow!("reactors: cannot open another SO_REUSEPORT listener on {addr}: {e}")
        })?);
    }
    let per_loop = (cfg.max_connections / n).max(1);
    // One pool for all reactors: file work is bounded by the disk, not by
    // how many loops share it.
    let offload = Offload::start()
        .map_err(|e| anyhow::anyhow!("reactors: cannot start the offload threads: {e}"))?;
    let offload = &offload;
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        let mut not_started = None;
        for (i, l) in listeners.into_iter().enumerate() {
            let spawned = std::thread::Builder::new()
                .name(format!("reactor-{i}"))
                .spawn_scoped(scope, move || {
                    let r = event_loop::run_loop(l, cfg, per_loop, offload, shutdown);
                    if r.is_err() {
                        // One reactor down (e.g. no descriptor left for its
                        // epoll) would leave a share of connections to a
                        // dead listener: stop them all and report it.
                        shutdown.trigger();
                    }
                    r
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Likewise a reactor that never started: the ones
                    // running stop, and the server reports why.
                    shutdown.trigger();
                    not_started = Some(anyhow::anyhow!(
                        "reactors: cannot start reactor {} of {n}: {e}",
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
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a reactor panicked")))
            })
            .collect::<anyhow::Result<Vec<()>>>();
        match not_started {
            Some(e) => Err(e),
            None => joined.map(drop),
        }
    })
}
