//! `bench --server-pid PID [--profile[=SVG]]`: watching a server bench did
//! not start over the run. Its process tree's CPU, memory, run-queue wait
//! and context switches come from /proc (`proc::monitor`); its syscalls by
//! kind from perf's counters over a short pass of the same load before
//! the run (`proc::syscalls`); with `--profile`, its call stacks from
//! perf record (`proc::profile`) into a flame graph. What the host forbids
//! is said in one line, and the run goes on with the rest.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::values::UsageError;
use crate::bench::progress::ProgressMode;
use crate::bench::server::{per_request, Counted, ServerFigures, ServerProfile};
use crate::bench::BenchResult;
use crate::bench::{self, BenchConfig};
use crate::proc::monitor::{tree, Monitor};
use crate::proc::profile::{self, Recording};
use crate::proc::syscalls::{self, Counters};
use crate::results::accounting::{Counts, SyscallKind};
use crate::sys::stacks::{flame_graph, summarize, Summary};

#[derive(Args, Debug, Default)]
pub struct ServerArgs {
    /// Watch this server, which bench did not start (its children and
    /// threads too), over the run: CPU per request with its user/system
    /// split, memory, run-queue wait and context switches; and (root, or
    /// perf_event_paranoid -1) syscalls per request by kind, counted in a
    /// pass of a quarter of the load (at most 0.5 s) before the run. In
    /// the report's Server block and the JSON's `server`.
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,
    /// With --server-pid: sample the server's call stacks with perf over
    /// the run into a flame graph SVG, flame-PID.svg unless named as
    /// --profile=FILE ({pid} in it becomes the PID).
    #[arg(
        long,
        value_name = "SVG",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = DEFAULT_FLAME_GRAPH,
        requires = "server_pid"
    )]
    pub profile: Option<PathBuf>,
}

/// Where `--profile` puts the flame graph unless told.
const DEFAULT_FLAME_GRAPH: &str = "flame-{pid}.svg";

/// What to watch, checked before any load.
#[derive(Debug, Clone)]
pub struct ServerWatchSpec {
    pub pid: u32,
    /// Where `--profile` writes the flame graph.
    pub flame_graph: Option<PathBuf>,
}

fn usage(msg: String) -> anyhow::Error {
    UsageError(msg).into()
}

impl ServerArgs {
    /// The watch asked for; a PID that is not a process this user can
    /// see is refused in one line. `alone` names a flag that makes the
    /// run's requests not the ones watched (warm-up, shards, a later
    /// start), which is refused too.
    pub fn spec(&self, alone: Option<&str>) -> anyhow::Result<Option<ServerWatchSpec>> {
        let Some(pid) = self.server_pid else {
            return Ok(None);
        };
        if let Some(flag) = alone {
            return Err(usage(format!(
                "--server-pid watches the server over the whole run, so its figures per request would count requests {flag} does not: not with {flag}"
            )));
        }
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(_) if pid > 0 => {}
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err(usage(format!(
                    "--server-pid {pid}: this user may not read that process's /proc entry"
                )))
            }
            _ => return Err(usage(format!("--server-pid {pid}: no such process"))),
        }
        let flame_graph = self
            .profile
            .as_ref()
            .map(|p| PathBuf::from(p.to_string_lossy().replace("{pid}", &pid.to_string())));
        if let Some(p) = &flame_graph {
            super::output::check_writable(p, "--profile")?;
        }
        Ok(Some(ServerWatchSpec { pid, flame_graph }))
    }
}

/// The counting pass lasts a quarter of the run, at most this long.
const PASS_MAX: Duration = Duration::from_millis(500);

/// The counting pass's load: the run's own, for a quarter of its
/// requests or time, at most `PASS_MAX`, with nothing kept but counts.
fn pass_config(cfg: &BenchConfig) -> BenchConfig {
    let mut c = cfg.clone();
    c.requests = cfg.requests.map(|n| (n / 4).max(1));
    c.duration = Some(cfg.duration.map_or(PASS_MAX, |d| (d / 4).min(PASS_MAX)));
    c.warmup = None;
    c.start_at = None;
    c.per_request = false;
    c.client.verbosity = 0;
    c
}

/// Counts the server's syscalls, context switches and ring entries over
/// a pass of the run's load before the run: the counters slow every
/// syscall and each new thread copies them, which would fall on the
/// run's own CPU figures. What the host forbids is said on stderr, once.
pub fn count(
    spec: &ServerWatchSpec,
    cfg: &BenchConfig,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Counted, String> {
    let counted = count_pass(spec.pid, cfg, stop);
    if let Err(why) = &counted {
        eprintln!("loadlab: no syscall counts for the server: {why}; the run goes on with its CPU, memory and run-queue figures");
    }
    counted
}

fn count_pass(
    pid: u32,
    cfg: &BenchConfig,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Counted, String> {
    let counters = Counters::open(pid)?;
    let before = counters.read();
    let pass = bench::run(&pass_config(cfg), Some(stop), ProgressMode::NONE)
        .map_err(|e| format!("the counting pass failed: {e:#}"))?;
    let c = syscalls::between(&before, &counters.read());
    drop(counters);
    Ok(Counted {
        requests: pass.stats.complete,
        syscalls: by_kind(&c),
        syscalls_total: c.total,
        ctx_switches: c.ctx_switches,
        ring_ops: ring_ops(&c),
    })
}

/// A server being watched over the run.
pub struct ServerWatch {
    spec: ServerWatchSpec,
    counted: Result<Counted, String>,
    recording: Option<Result<Sampling, String>>,
    monitor: Monitor,
}

impl ServerWatch {
    /// Starts perf's sampling (`--profile`), then the monitor: call right
    /// before the load, after `count`.
    pub fn start(spec: ServerWatchSpec, counted: Result<Counted, String>) -> ServerWatch {
        let recording = spec.flame_graph.as_ref().map(|_| {
            let r = Sampling::start(spec.pid);
            if let Err(why) = &r {
                eprintln!(
                    "loadlab: no flame graph of the server: {why}; the run goes on without it"
                );
            }
            r
        });
        let monitor = Monitor::start(spec.pid);
        ServerWatch {
            spec,
            counted,
            recording,
            monitor,
        }
    }

    /// Reads everything right after the load and puts it in `result`.
    pub fn finish(self, result: &mut BenchResult) -> anyhow::Result<()> {
        let usage = self.monitor.finish();
        let n = result.stats.complete;
        let mut f = ServerFigures {
            pid: self.spec.pid,
            processes: tree(self.spec.pid).len(),
            cpu_ms: usage.cpu_ms,
            cpu_user_ms: usage.cpu_user_ms,
            cpu_system_ms: usage.cpu_system_ms,
            cpu_us_per_request: per_request(usage.cpu_ms * 1000.0, n),
            peak_rss_kb: usage.peak_rss_kb,
            runq_wait_ms: usage.runq_wait_ms,
            ctx_switches: usage.ctx_switches,
            ctx_involuntary: usage.ctx_involuntary,
            ..ServerFigures::default()
        };
        match self.counted {
            Ok(c) => f.counted = Some(c),
            Err(why) => f.counted_unavailable = Some(why),
        }
        if let (Some(rec), Some(path)) = (self.recording, &self.spec.flame_graph) {
            let title = format!(
                "pid {}: {} ({} requests)",
                self.spec.pid, result.info.url, n
            );
            match rec.and_then(|r| r.finish(&title)) {
                Ok((stacks, svg)) => {
                    super::output::write_whole(path, &svg)?;
                    f.profile = Some(ServerProfile {
                        stacks,
                        flame_graph: path.display().to_string(),
                    });
                }
                Err(why) => f.profile_unavailable = Some(why),
            }
        }
        result.server = Some(f);
        Ok(())
    }
}

/// The counts by kind, by the report's names as JSON keys
/// (`clone_exit`, `thread_setup`).
fn by_kind(c: &Counts) -> BTreeMap<String, u64> {
    SyscallKind::ALL
        .iter()
        .map(|&k| {
            let n = match k {
                SyscallKind::Other => c.other,
                k => c.by_kind[k as usize],
            };
            let key = k
                .label()
                .replace("set-up", "setup")
                .replace(['+', ' '], "_");
            (key, n)
        })
        .collect()
}

/// Ring submissions by opcode, the unnamed ones as `other`; empty for a
/// server that made none.
fn ring_ops(c: &Counts) -> BTreeMap<String, u64> {
    let mut ops: BTreeMap<String, u64> = c
        .ring
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, &n)| (k.clone(), n))
        .collect();
    let named: u64 = ops.values().sum();
    if c.ring_total > named {
        ops.insert("other".into(), c.ring_total - named);
    }
    ops
}

/// perf sampling the server, with the directory its data goes to.
struct Sampling {
    recording: Recording,
    pid: u32,
    _data: tempfile::TempDir,
}

impl Sampling {
    fn start(pid: u32) -> Result<Sampling, String> {
        if let Some(why) = profile::unavailable() {
            return Err(why);
        }
        let data = tempfile::Builder::new()
            .prefix("loadlab-perf-")
            .tempdir()
            .map_err(|e| format!("cannot make a directory for perf's data: {e}"))?;
        let recording = Recording::start(pid, &data.path().join("perf.data"))?;
        Ok(Sampling {
            recording,
            pid,
            _data: data,
        })
    }

    /// The profile's figures and its flame graph.
    fn finish(self, title: &str) -> Result<(Summary, String), String> {
        let recorded = self.recording.finish()?;
        // Whether its user samples should reach loadlab's own functions.
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", self.pid)).unwrap_or_default();
        let loadlab = comm.trim() == "loadlab";
        let stacks = summarize(&recorded.folded, recorded.left_out, loadlab);
        if stacks.samples == 0 {
            return Err("perf took no sample of the server".into());
        }
        Ok((stacks, flame_graph(&recorded.folded, title)?))
    }
}
