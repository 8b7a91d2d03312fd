//! `loadlab bench`: an ab-compatible load generator built like wrk.
//! Measuring (engine), aggregating (stats) and rendering (render) are
//! separate pieces.

pub mod buckets;
mod codes;
pub mod config;
pub mod engine;
pub mod progress;
pub mod render;
pub mod result;
pub mod schedule;
mod send_timer;
pub mod slow;
pub mod stats;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use config::{BenchConfig, ConfigError, RequestSpec};
pub use progress::ProgressMode;
pub use result::BenchResult;
pub use stats::Stats;

use crate::net::tls::TlsClient;
use engine::{Shared, ThreadCounters, ThreadPlan, Worker};

/// Descriptors kept free beyond one per connection (epoll, stdio, files).
const FD_HEADROOM: u64 = 64;

/// Raises the soft open-file limit to the hard limit and checks that
/// `connections` sockets fit.
pub fn ensure_fd_limit(connections: usize) -> Result<(), ConfigError> {
    let soft = crate::sys::rlimit::raise_nofile_limit()
        .map_err(|e| ConfigError(format!("cannot read the open-file limit: {e}")))?;
    let need = connections as u64 + FD_HEADROOM;
    if need > soft {
        return Err(ConfigError(format!(
            "concurrency {connections} needs about {need} open files but the limit is {soft} \
             (raise it with `ulimit -n`)"
        )));
    }
    Ok(())
}

/// Splits connections, requests and rate over threads in proportion.
fn plans(cfg: &BenchConfig) -> Vec<ThreadPlan> {
    let threads = cfg.threads.min(cfg.concurrency).max(1);
    let c = cfg.concurrency;
    let mut out = Vec::with_capacity(threads);
    let mut req_left = cfg.requests;
    for t in 0..threads {
        let conns = c / threads + usize::from(t < c % threads);
        let requests = cfg.requests.map(|n| {
            let share = if t + 1 == threads {
                req_left.unwrap_or(0)
            } else {
                n * conns as u64 / c as u64
            };
            req_left = req_left.map(|l| l - share);
            share
        });
        out.push(ThreadPlan {
            connections: conns,
            requests,
            rate: cfg.rate.map(|r| r * conns as f64 / c as f64),
        });
    }
    out
}

/// Runs the benchmark. `stop` is polled and ends it early (Ctrl-C);
/// `progress` says what to show on stderr meanwhile.
pub fn run(
    cfg: &BenchConfig,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
    progress: ProgressMode,
) -> anyhow::Result<BenchResult> {
    run_measured(cfg, stop, progress).map(|(r, _)| r)
}

/// How a load thread spent its life: on a CPU, and ready to run but
/// waiting for one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadTime {
    pub cpu: Duration,
    pub waited: Duration,
}

/// `run`, and how each load thread spent its time (whether the client,
/// rather than the server, set the rate).
pub fn run_measured(
    cfg: &BenchConfig,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
    mode: ProgressMode,
) -> anyhow::Result<(BenchResult, Vec<ThreadTime>)> {
    cfg.validate()?;
    ensure_fd_limit(cfg.concurrency)?;
    let request = cfg.request.encode(&cfg.target);
    let tls = match cfg.target.tls {
        true => Some(TlsClient::new(&cfg.target.host, &cfg.tls).map_err(ConfigError)?),
        false => None,
    };
    let started = Instant::now();
    let measure_start = started + cfg.warmup.unwrap_or(Duration::ZERO);
    let shared = Shared {
        addr: cfg.target.addr,
        tls,
        request,
        sends_body: cfg.request.body.is_some(),
        head_request: cfg.request.is_head(),
        keep_alive: cfg.request.keep_alive,
        timeout: cfg.timeout,
        variable_length: cfg.variable_length,
        run_start: started,
        measure_start,
        deadline: cfg.duration.map(|d| measure_start + d),
        stop: AtomicBool::new(false),
        doc_length: AtomicU64::new(engine::NO_LENGTH),
    };
    let plans = plans(cfg);
    let progress: Vec<ThreadCounters> = plans.iter().map(|_| ThreadCounters::default()).collect();
    let finished = AtomicBool::new(false);
    let (stats, ended) = std::thread::scope(|scope| -> anyhow::Result<_> {
        let handles: Vec<_> = plans
            .iter()
            .zip(&progress)
            .map(|(plan, prog)| {
                let shared = &shared;
                let plan = plan.clone();
                scope.spawn(move || Worker::new(shared, plan, prog).map(Worker::run))
            })
            .collect();
        let watcher = scope.spawn(|| {
            let mut display = progress::Display::new(cfg, mode, &progress, started);
            while !finished.load(Ordering::Acquire) {
                if stop.is_some_and(|s| s()) {
                    shared.stop.store(true, Ordering::Relaxed);
                }
                display.tick();
                std::thread::sleep(Duration::from_millis(100));
            }
            display.finish();
        });
        let mut total = Stats::new(cfg.rate.is_some());
        let mut first_err = None;
        for h in handles {
            match h.join() {
                // One run's threads cannot count past u64::MAX.
                Ok(Ok(s)) => {
                    total.merge(&s);
                }
                Ok(Err(e)) => first_err = Some(anyhow::Error::from(e)),
                Err(_) => first_err = Some(anyhow::anyhow!("a load thread panicked")),
            }
        }
        let ended = Instant::now();
        finished.store(true, Ordering::Release);
        let _ = watcher.join();
        match first_err {
            Some(e) => Err(e),
            None => Ok((total, ended)),
        }
    })?;
    let elapsed = match cfg.duration {
        // A run ended by its time limit lasted exactly that long; requests
        // still in flight then are reported as such, not counted.
        Some(d) if stats.hit_deadline => d,
        _ => ended.saturating_duration_since(measure_start),
    };
    let thread_cpu = progress
        .iter()
        .map(|p| ThreadTime {
            cpu: Duration::from_nanos(p.cpu_ns.load(Ordering::Relaxed)),
            waited: Duration::from_nanos(p.wait_ns.load(Ordering::Relaxed)),
        })
        .collect();
    Ok((BenchResult::new(cfg, stats, elapsed), thread_cpu))
}
