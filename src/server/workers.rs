//! Worker threads for models with one listener per worker: the start-up
//! line waits for all to set up, and one failing stops them all, since its
//! share of connections would go to a dead listener.

use std::net::TcpListener;
use std::sync::mpsc::{channel, Sender};

use super::{reuseport_listeners, Ready, ServerConfig, Shutdown};

/// How a worker reports, once and before serving, that it is set up (with
/// `key=value` words for the start-up line) or why not; returning without
/// reporting counts as failure.
pub struct SetUp(Sender<Result<String, String>>);

impl SetUp {
    pub fn done(&self, words: String) {
        let _ = self.0.send(Ok(words));
    }

    pub fn failed(&self, why: String) {
        let _ = self.0.send(Err(why));
    }
}

/// Runs `cfg.workers` workers, each on a thread and SO_REUSEPORT listener
/// of its own so no lock is shared, with a share of `cfg.max_connections`;
/// calls `ready` once all are set up and returns once all have returned.
pub fn per_listener<F>(
    listener: TcpListener,
    cfg: &ServerConfig,
    (model, name): (&str, &str),
    shutdown: &Shutdown,
    ready: Ready<'_>,
    serve: F,
) -> anyhow::Result<()>
where
    F: Fn(TcpListener, usize, SetUp) -> anyhow::Result<()> + Sync,
{
    let n = cfg.workers.max(1);
    let listeners = reuseport_listeners(listener, n, cfg, model)?;
    let share = (cfg.max_connections / n).max(1);
    let serve = &serve;
    std::thread::scope(|scope| {
        let (tx, rx) = channel();
        let mut handles = Vec::with_capacity(n);
        let mut failed = None;
        for (i, l) in listeners.into_iter().enumerate() {
            let set_up = SetUp(tx.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn_scoped(scope, move || {
                    let r = serve(l, share, set_up);
                    if r.is_err() {
                        shutdown.trigger();
                    }
                    r
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    failed = Some(anyhow::anyhow!(
                        "{model}: cannot start {name} {} of {n}: {e}",
                        i + 1
                    ));
                    break;
                }
            }
        }
        drop(tx);
        let mut words = String::new();
        for _ in 0..handles.len() {
            match rx.recv() {
                Ok(Ok(w)) => words = w,
                Ok(Err(e)) => {
                    failed.get_or_insert(anyhow::anyhow!("{model}: {e}"));
                }
                // A worker returned without saying: its error is joined.
                Err(_) => break,
            }
        }
        let announced = match &failed {
            None => ready(handles.len(), &words),
            Some(_) => Ok(()),
        };
        if failed.is_some() || announced.is_err() {
            shutdown.trigger();
        }
        let joined = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("{model}: a {name} thread panicked")))
            })
            .collect::<anyhow::Result<Vec<()>>>();
        match failed {
            Some(e) => Err(e),
            None => announced.and(joined.map(drop)),
        }
    })
}
