//! One measured run: bench against a running target with the target's
//! process tree, the load generator's threads and the CPUs both use
//! watched, the load generator kept off a pinned server's CPUs, and the
//! cell's slow clients (if any) held from before the first request to
//! after the last.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::plan::{Instance, Load, PlannedRun, SweepPlan};
use super::record::{self, ClientUse};
use super::shards::{self, ShardLoad, ShardPlan};
use crate::bench::slow::{SlowClients, SlowSpec};
use crate::bench::{self, BenchConfig, BenchResult, RequestSpec};
use crate::net::url::HttpUrl;
use crate::proc::affinity::{self, list_text};
use crate::proc::host::CpuStat;
use crate::proc::monitor::{self_cpu, Monitor};
use crate::proc::syscalls::{self, Counters};
use crate::proc::target::Running;
use crate::results::accounting;
use crate::results::raw::RawRow;

/// What a slow reader asks for: larger than a loopback socket's buffers,
/// so a server that writes it blocking is held until the reader is done,
/// and small enough that the models serve it from one buffer. The lab's
/// docroot holds a file of this name, so nginx answers it too.
pub const SLOW_READ_PATH: &str = "/bytes/262144";
/// The size `SLOW_READ_PATH` names.
pub const SLOW_READ_BYTES: usize = 262_144;

/// How long slow clients are held before the measured load begins. A
/// server answers 2,000 slow readers' requests as soon as they arrive
/// (2,000 x 256 KiB written into socket buffers at once): measured right
/// away, the first requests timed that burst (a 0.3-1 s stall on a busy
/// 2-core host), not the holding the cell is about.
pub const SLOW_SETTLE: Duration = Duration::from_secs(1);

/// Where a target instance and the load generator run: the CPUs the load
/// generator is pinned to (None: wherever it may), and the CPUs both may
/// use, whose load tells whether the pair saturated the machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub client: Option<Vec<usize>>,
    pub shared: Vec<usize>,
}

impl Placement {
    /// The load generator goes to the allowed CPUs a `--cpus N` server
    /// was not given; with none left it shares the server's, unpinned.
    /// The note says which, for the user and sweep.json.
    pub fn of(inst: &Instance, client_cpus: Option<usize>) -> (Placement, Option<String>) {
        let allowed = affinity::allowed_cpus();
        let Some(n) = inst.cpus.filter(|_| inst.spec.started_here()) else {
            let all = Placement {
                client: None,
                shared: allowed,
            };
            return (all, None);
        };
        let server = affinity::first_allowed(n).unwrap_or_else(|_| allowed.clone());
        let others = match client_cpus {
            Some(k) => affinity::last_allowed(k),
            None => affinity::others_than_first(n),
        };
        if others.is_empty() {
            let note = format!(
                "--cpus {n} leaves no other CPU for the load generator: it shares CPU {} with the server, unpinned",
                list_text(&server)
            );
            let shared = server;
            return (
                Placement {
                    client: None,
                    shared,
                },
                Some(note),
            );
        }
        let note = format!(
            "CPUs split (--cpus {n}{}): the server runs on CPU {}, the load generator on CPU {}",
            client_cpus.map_or(String::new(), |k| format!(", --client-cpus {k}")),
            list_text(&server),
            list_text(&others)
        );
        let shared = server.into_iter().filter(|c| others.contains(c)).collect();
        (
            Placement {
                client: Some(others),
                shared,
            },
            Some(note),
        )
    }
}

/// How the reason of a run ended by `--max-cell-time` starts.
pub const CAPPED: &str = "capped at ";

/// One bench run against `running`, measured; `run_id` is the number its
/// row will get; `counters`, when given, are read over the run into the
/// row's accounting (the counting pass). Err: the sweep cannot go on (its
/// shards failed).
pub fn measure(
    plan: &SweepPlan,
    running: &Running,
    run: &PlannedRun,
    place: &Placement,
    run_id: u64,
    counters: Option<&Counters>,
    stop: &(dyn Fn() -> bool + Sync),
) -> anyhow::Result<RawRow> {
    let mut row = record::run_row(run);
    let url = format!("{}{}", running.base, run.config.path);
    let target = match HttpUrl::parse(&url) {
        Ok(t) => t,
        Err(e) => {
            row.set_failed(e.to_string());
            return Ok(row);
        }
    };
    let c = run.config.concurrency as usize;
    let request = RequestSpec {
        method: "GET".into(),
        keep_alive: run.config.keepalive,
        ..RequestSpec::default()
    };
    let cfg = BenchConfig {
        requests: match run.load {
            Load::Requests(n) => Some(n.max(c as u64)),
            Load::Duration(_) => None,
        },
        duration: match run.load {
            Load::Duration(d) => Some(d),
            Load::Requests(_) => None,
        },
        concurrency: c,
        rate: run.config.rate,
        // One load thread per CPU the load generator was given.
        threads: plan.threads.unwrap_or_else(|| {
            place
                .client
                .as_ref()
                .map_or_else(crate::sys::cores, Vec::len)
        }),
        timeout: plan.timeout,
        // TLS at its defaults: verified against the system roots or
        // SSL_CERT_FILE.
        ..BenchConfig::new(target, request)
    };
    let slow_conns = run.config.slow_conns as usize;
    if let Err(e) = bench::ensure_fd_limit(c + slow_conns) {
        row.set_failed(e.to_string());
        return Ok(row);
    }
    // Held before the monitors start, so the connections' set-up is not
    // in the run's figures, and all established before the first request.
    let kind = run.config.slow;
    let slow = match (!kind.is_none()).then_some(kind) {
        Some(kind) => match SlowClients::start(SlowSpec {
            kind,
            conns: slow_conns,
            addr: cfg.target.addr,
            host: cfg.target.host_header(),
            path: SLOW_READ_PATH.into(),
        }) {
            Ok(s) => Some(s),
            Err(e) => {
                row.set_failed(format!("cannot start the slow connections: {e}"));
                return Ok(row);
            }
        },
        None => None,
    };
    if slow.is_some() {
        let until = Instant::now() + SLOW_SETTLE;
        while Instant::now() < until && !stop() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let counts0 = counters.map(Counters::read);
    let monitor = running.pid.map(Monitor::start);
    let stat0 = CpuStat::read();
    let cpu0 = self_cpu();
    let t0 = Instant::now();
    // --max-cell-time: the run ends there, like a Ctrl-C that ends only it.
    let capped = AtomicBool::new(false);
    let run_stop = || {
        if t0.elapsed() >= plan.max_cell_time {
            capped.store(true, Ordering::Relaxed);
        }
        capped.load(Ordering::Relaxed) || stop()
    };
    let run_stop: &(dyn Fn() -> bool + Sync) = &run_stop;
    let result = {
        // Load threads (and shard processes) inherit this thread's mask; a
        // mask that cannot be set leaves them where they may run, which
        // shared_cpu_busy_pct then shows.
        let _pinned = place
            .client
            .as_deref()
            .and_then(|cpus| affinity::pin_current_thread(cpus).ok());
        match &plan.shards {
            None => bench::run(&cfg, Some(run_stop), bench::ProgressMode::NONE).map(Some),
            Some(sp) => Ok(run_shards(sp, run_id, &cfg, &url, plan.threads, run_stop)?),
        }
    };
    let wall = t0.elapsed().as_secs_f64().max(1e-6);
    let client_cpu = self_cpu() - cpu0;
    let stat1 = CpuStat::read();
    let usage = monitor.map(Monitor::finish).unwrap_or_default();
    let counted = counters
        .zip(counts0)
        .map(|(c, before)| syscalls::between(&before, &c.read()));
    if let Some(s) = slow.map(SlowClients::finish) {
        row.slow_held_at_end = s.held_at_end as u64;
        row.slow_closed_by_server = s.closed_by_server;
        row.slow_connect_failures = s.connect_failures;
    }
    match result {
        Ok(Some(r)) if capped.load(Ordering::Relaxed) && !stop() => {
            record::fill_measured(&mut row, &r);
            row.set_failed(format!(
                "{CAPPED}{} s (--max-cell-time): {} of {} requests answered 2xx/3xx, {:.1} a second; the server made too little progress",
                plan.max_cell_time.as_secs_f64(),
                r.stats.answered_ok(),
                cfg.requests.map_or("its".to_string(), |n| n.to_string()),
                r.stats.answered_ok() as f64 / r.seconds(),
            ));
        }
        Ok(Some(r)) => {
            record::fill_measured(&mut row, &r);
            // Busy = on a CPU or ready and waiting for one: either way the
            // thread was not waiting for the server. CPU time alone reads
            // 40 % for a thread that never once waited for an answer when
            // other work shares its CPU (measured with the host's load
            // average at 6 on 2 cores), and would hide every client-bound
            // run on a busy host. Shards ran in other processes (or
            // elsewhere): their CPU is what their files say, and the
            // busiest thread of any shard sets the flag (bench's merge).
            let own = r.client.unwrap_or_default();
            let client = ClientUse {
                cpu_pct: match plan.shards {
                    None => client_cpu.as_secs_f64(),
                    Some(_) => own.cpu_s,
                } / wall
                    * 100.0,
                busiest_thread_pct: own.busiest_pct(r.seconds()),
                shared_busy_pct: stat0.busy_pct(&stat1, &place.shared),
            };
            record::fill_resources(&mut row, &usage, &client);
            if let Some(c) = counted {
                accounting::fill(&mut row, &c);
                row.server_counted_requests = Some(row.complete);
            }
        }
        // Ctrl-C: the caller does not record the row.
        Ok(None) => row.set_failed("interrupted".to_string()),
        Err(e) => row.set_failed(format!("{e:#}")),
    }
    Ok(row)
}

/// The cell's load as shards (`--shards`): the merged result; None after
/// Ctrl-C. Err stops the sweep (see `lab::shards`).
fn run_shards(
    sp: &ShardPlan,
    run_id: u64,
    cfg: &BenchConfig,
    url: &str,
    threads: Option<usize>,
    stop: &(dyn Fn() -> bool + Sync),
) -> anyhow::Result<Option<BenchResult>> {
    let load = ShardLoad {
        url: url.to_string(),
        requests: cfg.requests,
        duration: cfg.duration,
        concurrency: cfg.concurrency,
        keep_alive: cfg.request.keep_alive,
        rate: cfg.rate,
        timeout: cfg.timeout,
        threads,
    };
    let exe = std::env::current_exe()?;
    shards::run(sp, run_id, &exe, &load, stop)
}
