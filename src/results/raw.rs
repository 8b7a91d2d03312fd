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
}
}

impl RawRow {
    /// What the row records, read from its `error` column.
    pub fn status(&self) -> RowStatus<'_> {
        RowStatus::of_error(&self.error)
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
/// sweep keeps everything measured before.
pub fn append(dir: &Path, rows: &[RawRow]) -> anyhow::Result<()> {
    let path = dir.join(RAW_CSV);
    let fresh = !path.exists() || std::fs::metadata(&path)?.len() == 0;
    let file = OpenOptions::new().create(true).append(true).open(&path)?;
    let mut w = csv::WriterBuilder::new()
        .has_headers(fresh)
        .from_writer(file);
    for r in rows {
        w.serialize(r)?;
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
    if !header.is_empty() && header != expected_header() {
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
