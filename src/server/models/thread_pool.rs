//! A pool of worker threads fed by one accepting thread. With N workers
//! the pool is fixed; with 0 it grows when a connection finds no idle
//! worker and shrinks when workers stay idle.

use std::collections::VecDeque;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::server::accept::{self, Accepted, ConnLimit};
use crate::server::blocking::{self, Feed};
use crate::server::shutdown::TICK;
use crate::server::{wait_drained, Ready, ServerConfig, Shutdown};

/// A grown worker that has had nothing to do for this long exits.
pub const IDLE_EXIT: Duration = Duration::from_secs(5);

struct Pool {
    queue: Mutex<VecDeque<Accepted>>,
    ready: Condvar,
    /// Queue length, readable without the lock: workers ask it on every
    /// request to decide whether to give up a keep-alive connection.
    queued: AtomicUsize,
    idle: AtomicUsize,
    live: AtomicUsize,
}

impl Pool {
    fn push(&self, item: Accepted) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.push_back(item);
        self.queued.store(q.len(), Ordering::Release);
        self.ready.notify_one();
    }

    /// Next connection, or None when the worker should exit.
    fn pop(&self, shutdown: &Shutdown, growable: bool) -> Option<Accepted> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let idle_since = Instant::now();
        loop {
            if let Some(item) = q.pop_front() {
                self.queued.store(q.len(), Ordering::Release);
                return Some(item);
            }
            if shutdown.is_set() || (growable && idle_since.elapsed() >= IDLE_EXIT) {
                return None;
            }
            self.idle.fetch_add(1, Ordering::AcqRel);
            q = self
                .ready
                .wait_timeout(q, TICK)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            self.idle.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Feed for Pool {
    fn others_waiting(&self) -> bool {
        self.queued.load(Ordering::Acquire) > 0
    }
}

/// Runs the pool. A fixed pool starts its threads first and reports to
/// `ready` how many did, which a process limit may make fewer than asked.
pub fn run(
    listener: TcpListener,
    cfg: &ServerConfig,
    shutdown: &Shutdown,
    ready: Ready<'_>,
) -> anyhow::Result<()> {
    listener.set_nonblocking(true)?;
    let growable = cfg.workers == 0;
    let pool = Arc::new(Pool {
        queue: Mutex::new(VecDeque::new()),
        ready: Condvar::new(),
        queued: AtomicUsize::new(0),
        idle: AtomicUsize::new(0),
        live: AtomicUsize::new(0),
    });
    let spawn = |shared: &Arc<Pool>| -> std::io::Result<()> {
        let pool = Arc::clone(shared);
        let app = Arc::clone(&cfg.app);
        let limits = cfg.limits.clone();
        let shutdown = shutdown.clone();
        let grace = cfg.shutdown_grace;
        shared.live.fetch_add(1, Ordering::AcqRel);
        let spawned = std::thread::Builder::new()
            .name("pool".into())
            .stack_size(blocking::STACK_SIZE)
            .spawn(move || {
                while let Some((stream, _slot, accepted)) = pool.pop(&shutdown, growable) {
                    blocking::serve(stream, accepted, &app, &limits, &shutdown, grace, &*pool);
                }
                pool.live.fetch_sub(1, Ordering::AcqRel);
            });
        spawned.map(drop).inspect_err(|_| {
            // The thread never ran, so it will not count itself out; without
            // this, shutdown would wait out the whole grace period.
            shared.live.fetch_sub(1, Ordering::AcqRel);
        })
    };
    let started = start_fixed(cfg.workers, || spawn(&pool));
    if let Err(e) = started.and_then(|n| ready(n, "")) {
        // Threads that did start exit instead of waiting for work.
        shutdown.trigger();
        return Err(e);
    }
    let limit = ConnLimit::new(cfg.max_connections);
    // A growing pool that cannot grow says so once, not per connection.
    let mut spawn_failing = false;
    while let Some(item) = accept::next(&listener, &limit, shutdown) {
        pool.push(item);
        if growable && pool.idle.load(Ordering::Acquire) < pool.queued.load(Ordering::Acquire) {
            match spawn(&pool) {
                Ok(()) => spawn_failing = false,
                Err(e) if !spawn_failing => {
                    spawn_failing = true;
                    eprintln!(
                        "loadlab: cannot start another pool thread ({e}); the {} running serve the queue",
                        pool.live.load(Ordering::Acquire)
                    );
                }
                Err(_) => {}
            }
        }
    }
    // Closed before the pool drains: clients arriving now are refused at
    // once instead of queueing for a reset.
    drop(listener);
    wait_drained(cfg.shutdown_grace, || {
        pool.live.load(Ordering::Acquire) == 0
    });
    Ok(())
}

/// Starts `workers` threads, stopping at the first failure (a limit the
/// next would hit too). Returns how many started; an error if none did.
fn start_fixed(
    workers: usize,
    mut spawn: impl FnMut() -> std::io::Result<()>,
) -> anyhow::Result<usize> {
    for started in 0..workers {
        if let Err(e) = spawn() {
            if started == 0 {
                anyhow::bail!("cannot start any of the {workers} pool threads: {e}");
            }
            eprintln!("loadlab: started {started} of {workers} pool threads ({e}); serving with {started}");
            return Ok(started);
        }
    }
    Ok(workers)
}

#[cfg(test)]
mod tests {
    use super::start_fixed;

    #[test]
    fn start_fixed_counts_the_threads_that_started() {
        let fail_after = |n: usize| {
            let mut calls = 0;
            move || {
                calls += 1;
                if calls > n {
                    Err(std::io::Error::from_raw_os_error(libc::EAGAIN))
                } else {
                    Ok(())
                }
            }
        };
        assert_eq!(start_fixed(8, fail_after(100)).unwrap(), 8);
        assert_eq!(start_fixed(8, fail_after(3)).unwrap(), 3);
        let e = start_fixed(8, fail_after(0)).unwrap_err().to_string();
        assert!(
            e.starts_with("cannot start any of the 8 pool threads"),
            "{e}"
        );
        // A pool that grows on demand starts none up front.
        assert_eq!(start_fixed(0, fail_after(0)).unwrap(), 0);
    }
}
