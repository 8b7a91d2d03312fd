//! `loadlab bench`: an ab-compatible load generator built like wrk.
//! Measuring (engine), aggregating (stats) and rendering (render) are
//! separate pieces.

pub mod buckets;
pub mod clock;
mod codes;
pub mod combine;
pub mod config;
pub mod engine;
pub mod json;
pub mod load_id;
pub mod progress;
pub mod records;
pub mod render;
pub mod result;
pub mod schedule;
mod send_timer;
pub mod series;
pub mod server;
pub mod shard;
pub mod slow;
pub mod stats;
pub mod verdict;
pub mod violations;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use config::{BenchConfig, ClientOptions, ConfigError, RequestSpec};
pub use progress::ProgressMode;
pub use result::BenchResult;
pub use stats::Stats;

use crate::net::tls::TlsClient;
use clock::Anchor;
use clock::Window;
use engine::{Shared, ThreadCounters, ThreadPlan, Worker};
use records::{Records, MAX_RECORDS};
use schedule::Slots;

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

/// Splits this process's part of the load (`whole.part()`) over threads:
/// connections, requests and rate in proportion. Open loop, each thread's
/// slots are those of the whole run's schedule that its shard takes
/// (every N-th, from the shard's index), at the thread's share of the rate.
fn plans(whole: &BenchConfig) -> Vec<ThreadPlan> {
    let cfg = &whole.part();
    let (stride, phase) = whole
        .shard
        .map_or((1, 0), |s| (u64::from(s.count), u64::from(s.index)));
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
            // The whole run's rate, so a one-thread shard's slots are
            // exactly the whole schedule's (see `Slots`).
            rate: whole.rate.map(|r| Slots {
                rate: match conns == c {
                    true => r,
                    false => r * conns as f64 / c as f64,
                },
                stride,
                phase,
            }),
            // Each thread's even share of the bound, or of -n when that is
            // smaller (a thread's -n share can exceed the even share).
            record_cap: match cfg.per_request {
                true => (MAX_RECORDS / threads as u64).max(requests.unwrap_or(0)) as usize,
                false => 0,
            },
        });
    }
    out
}

/// How a load thread spent its life: on a CPU, and ready to run but
/// waiting for one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadTime {
    pub cpu: Duration,
    pub waited: Duration,
}

/// What the load threads used over a run, in the JSON so that the run's
/// verdict, a merge's and a sweep's row can say when the client, not the
/// server, set the rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClientTime {
    /// CPU time of all load threads together.
    pub cpu_s: f64,
    /// The busiest load thread's time on a CPU or ready and waiting for
    /// one (see `lab::measure` for why waiting counts as busy).
    pub busiest_thread_busy_s: f64,
    /// How long the load threads worked: the warm-up and the measured run
    /// (the busy time covers both). 0 in files from before it was
    /// recorded, which are then judged against the measured run alone.
    #[serde(default)]
    pub span_s: f64,
}

impl ClientTime {
    pub fn of(threads: &[ThreadTime], span: Duration) -> ClientTime {
        ClientTime {
            cpu_s: threads.iter().map(|t| t.cpu.as_secs_f64()).sum(),
            busiest_thread_busy_s: threads
                .iter()
                .map(|t| (t.cpu + t.waited).as_secs_f64())
                .fold(0.0, f64::max),
            span_s: span.as_secs_f64(),
        }
    }

    /// The busiest load thread's busy time, % of the time it worked
    /// (`measured_s`, the run's elapsed time, where the span is unknown).
    pub fn busiest_pct(&self, measured_s: f64) -> f64 {
        let c = self.spanned(measured_s);
        c.busiest_thread_busy_s / c.span_s.max(1e-9) * 100.0
    }

    /// This, with the run's elapsed time standing for a span not recorded.
    fn spanned(self, measured_s: f64) -> ClientTime {
        match self.span_s > 0.0 {
            true => self,
            false => ClientTime {
                span_s: measured_s,
                ..self
            },
        }
    }

    /// Several clients that ran at once (shards), each with its run's
    /// elapsed time: their CPU adds up, and the busiest thread of any of
    /// them stands for all, since one saturated shard is enough to hold
    /// the merged rate down.
    pub fn combine(each: impl IntoIterator<Item = (ClientTime, f64)>) -> Option<ClientTime> {
        each.into_iter()
            .map(|(c, measured_s)| c.spanned(measured_s))
            .reduce(|a, b| {
                let busiest = match b.busiest_pct(0.0) > a.busiest_pct(0.0) {
                    true => b,
                    false => a,
                };
                ClientTime {
                    cpu_s: a.cpu_s + b.cpu_s,
                    ..busiest
                }
            })
    }
}

/// Runs the benchmark. `stop` is polled and ends it early (Ctrl-C);
/// `mode` says what to show on stderr meanwhile. The result records how
/// the load threads spent their time (`client`): whether the client,
/// rather than the server, set the rate.
pub fn run(
    cfg: &BenchConfig,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
    mode: ProgressMode,
) -> anyhow::Result<BenchResult> {
    cfg.validate()?;
    let whole = cfg;
    let cfg = &whole.part();
    ensure_fd_limit(cfg.concurrency)?;
    let request = cfg.request_bytes();
    let tls = match cfg.target.tls {
        true => Some(TlsClient::new(&cfg.target.host, &cfg.tls).map_err(ConfigError)?),
        false => None,
    };
    let anchor = Anchor::now();
    let started = Instant::now();
    let warmup = cfg.warmup.unwrap_or(Duration::ZERO);
    let (run_start, measure_start) = match cfg.start_at {
        None => (started, started + warmup),
        Some(at) => {
            let at = anchor.instant_of(at).ok_or_else(|| {
                ConfigError(
                    "--start-at is further in the past than this machine has been up".into(),
                )
            })?;
            // Open loop, a late start keeps the schedule (its lateness
            // shows up in the corrected latencies); closed loop has no
            // schedule to keep and measures from when it could start.
            let measure = match cfg.rate {
                Some(_) => at,
                None => at.max(started),
            };
            (
                measure.checked_sub(warmup).unwrap_or(started).max(started),
                measure,
            )
        }
    };
    // The series' second 0, on the wall clock, so runs on other machines
    // line up with this one (`loadlab merge`).
    let start_unix_us = (anchor.unix_ms_of(measure_start) * 1e3).max(0.0) as u64;
    let log = engine::verbose::Log {
        level: cfg.client.verbosity,
        to_stderr: cfg.client.log_to_stderr,
    };
    log.request(&cfg.request.method, &request);
    let shared = Shared {
        addr: cfg.connect_addr(),
        dial: engine::dial::Dial {
            local: cfg.client.local_addr,
            buffer: cfg.client.socket_buffer,
        },
        tunnel: cfg.tunnel_request(),
        log,
        tls,
        request,
        sends_body: cfg.request.body.is_some(),
        head_request: cfg.request.is_head(),
        keep_alive: cfg.request.keep_alive,
        timeout: cfg.timeout,
        variable_length: cfg.variable_length,
        strict: cfg.strict,
        run_start,
        measure_start,
        deadline: cfg.duration.map(|d| measure_start + d),
        // A time-limited run reports exactly its limit as its length, so
        // the responses read in the batch that crossed it count in its last
        // second, not in one after it.
        last_second: cfg.duration.map_or(u64::MAX, |d| {
            (d.as_nanos().div_ceil(1_000_000_000) as u64).max(1) - 1
        }),
        stop: AtomicBool::new(false),
        doc_length: AtomicU64::new(engine::NO_LENGTH),
    };
    let plans = plans(whole);
    let tcp_before = crate::sys::tcp::read();
    let progress: Vec<ThreadCounters> = plans.iter().map(|_| ThreadCounters::default()).collect();
    let finished = AtomicBool::new(false);
    let (mut stats, records, ended) = std::thread::scope(|scope| -> anyhow::Result<_> {
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
        let mut records = Vec::new();
        let mut first_err = None;
        for h in handles {
            match h.join() {
                // One run's threads cannot count past u64::MAX.
                Ok(Ok((s, r))) => {
                    total.merge(&s);
                    records.push(r);
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
            None => Ok((total, Records::gather(records), ended)),
        }
    })?;
    stats.series.start_unix_us = Some(start_unix_us);
    let elapsed = match cfg.duration {
        // A run ended by its time limit lasted exactly that long; requests
        // still in flight then are reported as such, not counted.
        Some(d) if stats.hit_deadline => d,
        _ => ended.saturating_duration_since(measure_start),
    };
    let thread_cpu: Vec<ThreadTime> = progress
        .iter()
        .map(|p| ThreadTime {
            cpu: Duration::from_nanos(p.cpu_ns.load(Ordering::Relaxed)),
            waited: Duration::from_nanos(p.wait_ns.load(Ordering::Relaxed)),
        })
        .collect();
    // The run's actual start: its first measured request on the wire.
    let first_send = progress
        .iter()
        .map(|p| p.first_send_ns.load(Ordering::Relaxed))
        .filter(|&ns| ns > 0)
        .min()
        .map_or(measure_start, |ns| run_start + Duration::from_nanos(ns - 1));
    let window = Window {
        planned_start_unix_ms: cfg.start_at.map(clock::unix_ms),
        start_unix_ms: anchor.unix_ms_of(first_send),
        end_unix_ms: anchor.unix_ms_of(measure_start + elapsed),
        start_skew_ms: None,
    };
    let mut result = BenchResult::new(cfg, stats, elapsed);
    let tcp = crate::sys::tcp::delta(&tcp_before, &crate::sys::tcp::read());
    result.kernel_tcp = (!tcp.is_empty()).then_some(tcp);
    result.records = records;
    result.window = Some(window);
    result.shard = whole.shard.map(|s| load_id::shard_info(whole, s));
    result.client = Some(ClientTime::of(&thread_cpu, warmup + elapsed));
    Ok(result)
}
