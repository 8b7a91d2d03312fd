//! The raw results file: one CSV row per run, appended and never
//! rewritten. Everything else in a results directory is derived from it.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use super::config::{Configured, RunConfig};

/// File name of the raw results inside a results directory.
pub const RAW_CSV: &str = "raw.csv";
/// File name of the machine description inside a results directory.
pub const MACHINE_JSON: &str = "machine.json";

/// Starts the `error` of a row that records a target left out (nginx not
/// installed) rather than a run that failed. raw.csv keeps it as text so
/// its columns never change; code reads it as `RowStatus`.
const SKIPPED_PREFIX: &str = "skipped: ";

impl<'a> RowStatus<'a> {
    /// The status a row with this `error` column records.
    pub fn of_error(error: &'a str) -> RowStatus<'a> {
        match error.strip_prefix(SKIPPED_PREFIX) {
            _ if error.is_empty() => RowStatus::Measured,
            Some(why) => RowStatus::Skipped(why),
            None => RowStatus::Failed(error),
        }
    }

    /// The reason without the marker: why the run failed or was left out.
    pub fn reason(self) -> &'a str {
        match self {
            RowStatus::Measured => "",
            RowStatus::Failed(why) | RowStatus::Skipped(why) => why,
        }
    }
}

/// What a raw row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowStatus<'a> {
    /// A run that was made; its numbers are the measurement.
    Measured,
    /// A run that could not be made (the target did not start, say).
    Failed(&'a str),
    /// A target left out on purpose (nginx or go not installed): no run
    /// at all.
    Skipped(&'a str),
}

crate::with_run_config! {
    /// One run of one configuration against one target. Times in ms unless
    /// the name says otherwise. `error` is non-empty when the run could not
    /// be made (the target did not start, say); its numbers are then zero.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    pub struct RawRow {
        pub run_id: u64,
        /// Seconds since the Unix epoch when the run started.
        pub started_at: f64,
        ..RunConfig,
        /// 1-based repeat number within the configuration.
    pub repeat: u64,
    /// Warm-up runs are recorded but left out of summaries.
    pub warmup: bool,
    pub time_taken_s: f64,
    pub complete: u64,
    pub failed: u64,
    pub non_2xx: u64,
    pub timeouts: u64,
    pub total_bytes: u64,
    pub html_bytes: u64,
    pub requests_per_second: f64,
    /// ab's "Time per request (mean)" and "(mean, across all concurrent requests)".
    pub time_per_request_ms: f64,
    pub time_per_request_all_ms: f64,
    pub transfer_kbps: f64,
    pub connect_min_ms: f64,
    pub connect_mean_ms: f64,
    pub connect_sd_ms: f64,
    pub connect_median_ms: f64,
    pub connect_max_ms: f64,
    pub processing_min_ms: f64,
    pub processing_mean_ms: f64,
    pub processing_sd_ms: f64,
    pub processing_median_ms: f64,
    pub processing_max_ms: f64,
    pub waiting_min_ms: f64,
    pub waiting_mean_ms: f64,
    pub waiting_sd_ms: f64,
    pub waiting_median_ms: f64,
    pub waiting_max_ms: f64,
    pub total_min_ms: f64,
    pub total_mean_ms: f64,
    pub total_sd_ms: f64,
    pub total_median_ms: f64,
    pub total_max_ms: f64,
    pub p50_ms: f64,
    pub p66_ms: f64,
    pub p75_ms: f64,
    pub p80_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p98_ms: f64,
    pub p99_ms: f64,
    pub p99_9_ms: f64,
    pub p100_ms: f64,
    /// Server process tree: mean CPU % over the run (100 = one core).
    pub server_cpu_pct: f64,
    pub server_rss_peak_kb: u64,
    /// The load generator's own CPU % over the run.
    pub client_cpu_pct: f64,
    /// Answers with a 2xx or 3xx status: the only ones counted as
    /// throughput outside ab's own figures.
    pub ok_responses: u64,
    /// `ok_responses` per second of the run.
    pub ok_rps: f64,
    /// The server process tree's CPU time (user + system, every thread and
    /// child) over the whole run, from the processes' CPU clocks.
    pub server_cpu_ms: f64,
    /// Voluntary + involuntary context switches of the server process
    /// tree over the run.
    pub server_ctx_switches: u64,
    /// The busiest load-generator thread's CPU time, plus the time it was
    /// ready to run but waited for a CPU, as a % of the run's wall time
    /// (100 = that thread never waited for the server).
    pub client_thread_max_pct: f64,
    /// How busy the CPUs that client and server shared were over the run,
    /// all together (100 = every shared CPU busy the whole time); 0 when
    /// they shared none.
    pub shared_cpu_busy_pct: f64,
    /// A load thread was busy at least 90 % of the run: the client, not
    /// the server, set the rate.
    pub client_bound: bool,
    /// The CPUs client and server shared were at least 90 % busy: the run
    /// measured the pair, not the server.
    pub cpu_saturated: bool,
    /// Slow connections open when the run ended (0 without slow clients):
    /// fewer than `slow_conns` means the server shed some.
    pub slow_held_at_end: u64,
    /// Times the server closed a slow connection during the run (each was
    /// opened again).
    pub slow_closed_by_server: u64,
    /// Slow connection attempts that failed (refused, no descriptors).
    pub slow_connect_failures: u64,
    pub error: String,
    // Columns added after the first release of raw.csv: always at the end,
    // always Option, so a file written before them reads them as unknown
    // (empty), never 0.
    /// Answers that broke a rule yet counted as answered, summed over the
    /// kinds (an answer with two kinds counts twice).
    pub violations: Option<u64>,
    /// The kinds seen with their counts, `bytes-after-body 200; bad-date 3`.
    pub violation_kinds: Option<String>,
    /// Keep-alive connections closed because a violation left their
    /// framing unknown.
    pub violation_closes: Option<u64>,
    /// Connections the load generator tried to open, warm-up included.
    pub connections_opened: Option<u64>,
    /// The kernel's TCP counters over the run (the whole network
    /// namespace, `sys::tcp`); empty when one could not be read.
    pub tcp_listen_overflows: Option<u64>,
    pub tcp_listen_drops: Option<u64>,
    pub tcp_syncookies_sent: Option<u64>,
    pub tcp_syn_retrans: Option<u64>,
    pub tcp_retrans_segs: Option<u64>,
    pub tcp_attempt_fails: Option<u64>,
    pub tcp_estab_resets: Option<u64>,
    pub tcp_out_rsts: Option<u64>,
    pub tcp_active_opens: Option<u64>,
    /// Other targets that burned CPU while this run measured another, as
    /// `label (N % of a core)`; empty when none did (or not recorded).
    pub disturbed_by: Option<String>,
    /// Open loop: requests put on the wire per second (answered, failed
    /// or in flight at the end); below 95 % of `rate` the run is
    /// rate-short. Empty for a closed-loop run.
    pub achieved_rate: Option<f64>,
    ..RunConfigTail,
    /// The server's syscalls over the run (every process and thread),
    /// counted by perf's tracepoints; empty where the host does not allow
    /// it (see `accounting`) or loadlab did not start the server.
    pub server_syscalls: Option<u64>,
    /// Of those: read, readv, pread64, recvfrom, recvmsg, recvmmsg.
    pub server_sys_reads: Option<u64>,
    /// write, writev, pwrite64, sendto, sendmsg, sendmmsg, sendfile, splice.
    pub server_sys_writes: Option<u64>,
    /// epoll_wait, epoll_pwait, epoll_pwait2.
    pub server_sys_epoll_wait: Option<u64>,
    pub server_sys_io_uring_enter: Option<u64>,
    /// accept, accept4.
    pub server_sys_accept: Option<u64>,
    pub server_sys_close: Option<u64>,
    pub server_sys_futex: Option<u64>,
    /// clone, clone3, fork, vfork, exit, exit_group.
    pub server_sys_clone_exit: Option<u64>,
    /// Every other syscall.
    pub server_sys_other: Option<u64>,
    /// Context switches from perf's inherited counter: threads that
    /// exited during the run included.
    pub server_switches_counted: Option<u64>,
    /// Time the server's threads were ready to run but waited for a CPU
    /// (schedstat), in ms; a lower bound when threads exited mid-run.
    pub server_runq_wait_ms: Option<f64>,
    /// The server's CPU time split into user and system (kernel) time,
    /// from /proc clock ticks.
    pub server_cpu_user_ms: Option<f64>,
    pub server_cpu_system_ms: Option<f64>,
    /// Why syscalls were not counted, or which events perf left
    /// uncounted; empty when all were.
    pub accounting: Option<String>,
    /// The requests the syscall and context-switch counts cover: those of
    /// the cell's counting pass (the counters slow every syscall, so they
    /// are not on over measured runs). Empty in rows counted over the run
    /// itself (older files): the run's completed requests.
    pub server_counted_requests: Option<u64>,
    /// io_uring submissions by opcode over the same requests, as `op=n`
    /// pairs; empty for a server that submitted none.
    pub server_ring_ops: Option<String>,
    /// poll, ppoll, select, pselect6: waiting on a few descriptors (blocking models with timeouts).
    pub server_sys_poll: Option<u64>,
    /// mmap, munmap, mprotect, madvise, mremap, brk: mapping memory (a new thread's stack).
    pub server_sys_memory: Option<u64>,
    /// rt_sigprocmask, sigaltstack, set_robust_list, rseq, prctl, gettid, sched_getaffinity, set_tid_address: what a new thread does before its work.
    pub server_sys_thread_setup: Option<u64>,
    /// setsockopt, getsockopt, ioctl, fcntl: setting a socket up.
    pub server_sys_sockopt: Option<u64>,
    /// Of `server_ctx_switches`, those the scheduler forced (/proc's
    /// nonvoluntary count): a lower bound where threads exited mid-run.
    pub server_ctx_involuntary: Option<u64>,

}
}

/// The first column added after raw.csv's first release: a file whose
/// header stops before it (or anywhere after it) is an older loadlab's.
const FIRST_ADDED: &str = "violations";

impl RawRow {
    /// What the row records, read from its `error` column.
    pub fn status(&self) -> RowStatus<'_> {
        RowStatus::of_error(&self.error)
    }

    /// An open-loop run that put less than `stats::RATE_KEPT` of its
    /// offered rate on the wire.
    pub fn rate_short(&self) -> bool {
        matches!((self.rate, self.achieved_rate), (Some(r), Some(a)) if !crate::stats::rate_kept(r, a))
    }

    /// Whether the row records a run that was made (its numbers are the
    /// measurement), not a failed run or a target left out.
    pub fn is_measured(&self) -> bool {
        self.status() == RowStatus::Measured
    }

    /// Whether the row records a run that could not be made.
    pub fn is_failed(&self) -> bool {
        matches!(self.status(), RowStatus::Failed(_))
    }

    /// Whether the row records a target that was left out, not a run.
    pub fn is_skip(&self) -> bool {
        matches!(self.status(), RowStatus::Skipped(_))
    }

    /// Marks the row as a run that could not be made, for `why`.
    pub fn set_failed(&mut self, why: String) {
        self.error = why;
    }

    /// Marks the row as a target left out, for `why`.
    pub fn set_skipped(&mut self, why: &str) {
        self.error = format!("{SKIPPED_PREFIX}{why}");
    }
}

/// Appends rows to `dir/raw.csv`, writing the header only when the file
/// is new. Existing rows are never touched, so an interrupted or resumed
/// sweep keeps everything measured before. A file an older loadlab began
/// keeps its columns: rows appended to it leave out the newer ones, which
/// then read as unknown (see [`older_columns`]).
pub fn append(dir: &Path, rows: &[RawRow]) -> anyhow::Result<()> {
    let path = dir.join(RAW_CSV);
    let fresh = !path.exists() || std::fs::metadata(&path)?.len() == 0;
    let width = if fresh {
        expected_header().len()
    } else {
        file_header(&path)?.len()
    };
    let file = OpenOptions::new().create(true).append(true).open(&path)?;
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(file);
    if fresh {
        w.write_record(&expected_header())?;
    }
    for r in rows {
        let record = record_of(r)?;
        w.write_record(record.iter().take(width))?;
    }
    w.flush()?;
    let mut f = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
    f.flush()?;
    Ok(())
}

/// Reads every row of `dir/raw.csv`.
pub fn read(dir: &Path) -> anyhow::Result<Vec<RawRow>> {
    let path = dir.join(RAW_CSV);
    let mut r = csv::Reader::from_path(&path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    // Empty: a sweep stopped before its first run. Any other header than
    // this version's would make every row mean something else (or, cut
    // short, glue the next appended row onto it).
    let header = r.headers()?.clone();
    if !header.is_empty() && !known_header(&header) {
        anyhow::bail!(
            "{} does not start with loadlab's raw.csv header ({} columns from {})",
            path.display(),
            expected_header().len(),
            expected_header().get(0).unwrap_or_default()
        );
    }
    let mut rows = Vec::new();
    for row in r.deserialize() {
        rows.push(row?);
    }
    Ok(rows)
}

/// The columns a results directory's raw.csv lacks because an older
/// loadlab began it (their values read as unknown); empty for a current
/// or missing file.
pub fn older_columns(dir: &Path) -> Vec<String> {
    let Ok(header) = file_header(&dir.join(RAW_CSV)) else {
        return Vec::new();
    };
    if header.is_empty() {
        return Vec::new();
    }
    expected_header()
        .iter()
        .skip(header.len())
        .map(str::to_string)
        .collect()
}

/// Whether `header` is this version's, or an older one's: the same
/// columns cut short no earlier than the first added one.
fn known_header(header: &csv::StringRecord) -> bool {
    let expected = expected_header();
    let first_added = expected.iter().position(|c| c == FIRST_ADDED);
    header.len() >= first_added.unwrap_or(expected.len())
        && header.iter().zip(expected.iter()).all(|(a, b)| a == b)
}

/// The header `path` starts with (empty for an empty file).
fn file_header(path: &Path) -> anyhow::Result<csv::StringRecord> {
    let mut r = csv::Reader::from_path(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    Ok(r.headers()?.clone())
}

/// One row as the fields `append` writes, in header order.
fn record_of(row: &RawRow) -> anyhow::Result<csv::StringRecord> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    w.serialize(row)?;
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(bytes.as_slice());
    r.records()
        .next()
        .ok_or_else(|| anyhow::anyhow!("a raw row serialized to nothing"))?
        .map_err(Into::into)
}

/// The header `append` writes: RawRow's field names, in order.
fn expected_header() -> csv::StringRecord {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Serializing a row writes the header first; only that is kept.
    let _ = w.serialize(RawRow::default());
    let bytes = w.into_inner().unwrap_or_default();
    csv::Reader::from_reader(bytes.as_slice())
        .headers()
        .cloned()
        .unwrap_or_default()
}

/// The machine a results directory was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cores: usize,
    pub cpu_model: String,
    pub kernel: String,
    pub memory_gib: f64,
    pub loadlab_version: String,
    pub hostname: String,
}

impl Machine {
    pub fn detect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string();
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap_or_default()
            .trim()
            .to_string();
        let mem_kb: f64 = std::fs::read_to_string("/proc/meminfo")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0.0);
        Machine {
            cores: crate::sys::cores(),
            cpu_model,
            kernel,
            memory_gib: (mem_kb / 1024.0 / 1024.0 * 10.0).round() / 10.0,
            loadlab_version: env!("CARGO_PKG_VERSION").to_string(),
            hostname,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file as an older loadlab wrote it: every column up to `error`.
    fn write_older(dir: &Path, rows: &[RawRow]) {
        let header = expected_header();
        let width = header.iter().position(|c| c == FIRST_ADDED).unwrap();
        let mut w = csv::Writer::from_path(dir.join(RAW_CSV)).unwrap();
        w.write_record(header.iter().take(width)).unwrap();
        for r in rows {
            w.write_record(record_of(r).unwrap().iter().take(width))
                .unwrap();
        }
        w.flush().unwrap();
    }

    fn row(run_id: u64) -> RawRow {
        RawRow {
            run_id,
            complete: 10,
            violations: Some(4),
            violation_kinds: Some("bytes-after-body 4".into()),
            tcp_listen_overflows: Some(0),
            tcp_active_opens: Some(12),
            rate: Some(2500.0),
            achieved_rate: Some(2300.0),
            ..RawRow::default()
        }
    }

    #[test]
    fn the_offered_rate_follows_the_earlier_columns_and_is_part_of_the_configuration() {
        let header: Vec<String> = expected_header().iter().map(str::to_string).collect();
        let at = |c: &str| header.iter().position(|h| h == c).unwrap();
        // Added columns go after every earlier one: the rate after
        // achieved_rate, the server's accounting after the rate.
        assert_eq!(at("rate"), at("achieved_rate") + 1);
        assert_eq!(at("server_syscalls"), at("rate") + 1);
        assert_eq!(at("server_counted_requests"), at("accounting") + 1);
        assert_eq!(
            header.last().map(String::as_str),
            Some("server_ctx_involuntary")
        );
        let r = row(1);
        assert!(r.rate_short(), "2300 of 2500/s is under 95 %");
        let kept = RawRow {
            achieved_rate: Some(2400.0),
            ..row(1)
        };
        assert!(!kept.rate_short());
        let closed = RawRow {
            rate: None,
            ..row(1)
        };
        assert!(!closed.rate_short());
        assert_ne!(closed.run_config(), r.run_config());
    }

    #[test]
    fn new_columns_read_back_and_unknown_stays_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let mut unknown = row(2);
        unknown.tcp_listen_drops = None;
        append(dir.path(), &[row(1), unknown.clone()]).unwrap();
        let back = read(dir.path()).unwrap();
        assert_eq!(back, vec![row(1), unknown]);
        assert!(older_columns(dir.path()).is_empty());
    }

    #[test]
    fn an_older_file_reads_its_missing_columns_as_unknown_and_keeps_its_width() {
        let dir = tempfile::tempdir().unwrap();
        write_older(dir.path(), &[row(1)]);
        let missing = older_columns(dir.path());
        assert_eq!(missing.first().map(String::as_str), Some(FIRST_ADDED));
        // A resumed sweep appends rows in the file's own columns.
        append(dir.path(), &[row(2)]).unwrap();
        let back = read(dir.path()).unwrap();
        assert_eq!(back.len(), 2);
        for r in &back {
            assert_eq!(r.complete, 10);
            assert_eq!((r.violations, r.tcp_active_opens), (None, None), "{r:?}");
            assert_eq!(
                (r.rate, r.achieved_rate),
                (None, None),
                "closed loop: {r:?}"
            );
        }
        assert_eq!(back[1].run_id, 2);
    }

    #[test]
    fn a_header_cut_before_the_added_columns_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(RAW_CSV), "run_id,started_at\n1,0\n").unwrap();
        let err = read(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("does not start with loadlab's raw.csv header"),
            "{err}"
        );
    }
}
