//! Aggregation: raw runs grouped by configuration, reduced to means,
//! standard deviations and 95 % intervals over repeats, each
//! configuration's status, its paired ratio to the baseline, and E4's
//! sliding windows. No IO and no formatting here; the tables, charts,
//! findings and files are built from this. Grouping the rows and
//! pairing them with a baseline is `group.rs`.

use serde::Serialize;

use crate::results::config::{Configured, RunConfig};
use crate::results::raw::RawRow;
use crate::stats::Interval;
use crate::sys::tcp::other_opens;

mod accounting;
mod group;

pub use group::{summarize, summarize_against};

/// A load thread busy this much of a run (%) means the client set the
/// rate; the same threshold LAB sets `client_bound` with.
pub const BUSY_PCT: f64 = 90.0;

/// A run shorter than this (s) had its CPU figures taken over too short a
/// time to mean much: they are "CPU rough".
pub const ROUGH_CPU_S: f64 = 0.1;

/// The measured runs of one configuration: not warm-up, no error, ordered
/// by repeat number (then run id, should a repeat have been run twice).
#[derive(Debug, Clone)]
pub struct Group {
    pub key: RunConfig,
    pub runs: Vec<RawRow>,
    pub warmup_runs: usize,
    pub error_runs: usize,
}

impl Group {
    /// Mean and sample standard deviation of one field over the runs.
    pub fn stat(&self, field: impl Fn(&RawRow) -> f64) -> (f64, f64) {
        let v: Vec<f64> = self.runs.iter().map(field).collect();
        mean_sd(&v)
    }

    /// Answered (2xx/3xx) requests per second of each run, by round.
    pub fn rps_by_round(&self) -> Vec<(u64, f64)> {
        self.runs.iter().map(|r| (r.repeat, r.ok_rps)).collect()
    }

    /// Server CPU µs per completed response in each round; rounds where
    /// the server was not watched or answered nothing are left out.
    pub fn cpu_us_by_round(&self) -> Vec<(u64, f64)> {
        self.runs
            .iter()
            .filter(|r| r.server_rss_peak_kb > 0 && r.complete > 0 && r.server_cpu_ms > 0.0)
            .map(|r| (r.repeat, r.server_cpu_ms * 1000.0 / r.complete as f64))
            .collect()
    }

    /// Answered requests per second over the runs, with its interval.
    pub fn rps(&self) -> Interval {
        let v: Vec<f64> = self.runs.iter().map(|r| r.ok_rps).collect();
        Interval::of(&v)
    }
}

/// What a configuration's figures can be taken for: the first that
/// applies, in this order. The boolean columns of a summary row keep the
/// others, so a failed cell that was also noisy says both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub enum Status {
    /// Failed requests, or runs that could not be made, or no answer at
    /// all: part of the work is missing from the figures.
    #[serde(rename = "failed")]
    Failed,
    /// Some answers were not 2xx/3xx (a wrong path answers 404): they are
    /// not counted as throughput.
    #[serde(rename = "non-2xx")]
    Non2xx,
    /// Open loop: a run put less than 95 % of the offered rate on the
    /// wire (`stats::RATE_KEPT`, bench's rate-short): its latencies
    /// describe a lighter load than the cell names.
    #[serde(rename = "rate-short")]
    RateShort,
    /// A load thread was busy at least 90 % of a run: the client, not the
    /// server, set the rate.
    #[serde(rename = "client-bound")]
    ClientBound,
    /// The CPUs client and server shared were at least 90 % busy: the
    /// figures measure the pair, not the server.
    #[serde(rename = "cpu-saturated")]
    CpuSaturated,
    /// Another target burned CPU while a run of this one was measured:
    /// the run had less of the machine than it should have.
    #[serde(rename = "disturbed")]
    Disturbed,
    /// The repeats disagree (CV of requests/s above 10 %).
    #[serde(rename = "noisy")]
    Noisy,
    /// Answers broke a rule (bytes after the body, a bare LF...) yet
    /// counted as answered: the figures stand, the server needs a fix.
    #[serde(rename = "violations")]
    Violations,
    #[default]
    #[serde(rename = "ok")]
    Ok,
}

impl Status {
    /// The word the tables, CSV and JSON use.
    pub fn word(self) -> &'static str {
        match self {
            Status::Failed => "failed",
            Status::Non2xx => "non-2xx",
            Status::RateShort => "rate-short",
            Status::ClientBound => "client-bound",
            Status::CpuSaturated => "cpu-saturated",
            Status::Disturbed => "disturbed",
            Status::Noisy => "noisy",
            Status::Violations => "violations",
            Status::Ok => "ok",
        }
    }

    /// Failed or non-2xx: the cell's throughput leaves work out, so it is
    /// never compared as if it were fine.
    pub fn is_broken(self) -> bool {
        matches!(self, Status::Failed | Status::Non2xx)
    }
}

/// Mean and sample standard deviation (n - 1 in the denominator: repeats
/// are a sample of what the configuration does). One value has sd 0.
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (mean, 0.0);
    }
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

crate::with_run_config! {
    /// One line of summary.csv / summary.json: a configuration and its
    /// figures over the measured repeats. Flat on purpose, so CSV and JSON
    /// share one shape.
    #[derive(Debug, Clone, Default, PartialEq, Serialize)]
    pub struct SummaryRow {
        ..RunConfig,
    /// Measured runs averaged here.
    pub runs: usize,
    /// Warm-up runs of this configuration, left out of the figures.
    pub warmup_runs: usize,
    /// Runs that failed to run; they are in the failed-runs table.
    pub error_runs: usize,
    /// The first of failed, non-2xx, client-bound, cpu-saturated, noisy
    /// that applies, else ok.
    pub status: Status,
    /// Answered (2xx/3xx) requests per second, mean over the runs: the
    /// throughput every table and chart shows.
    pub rps_mean: f64,
    /// 95 % interval of `rps_mean` (Student's t over the runs); empty with
    /// one run, whose spread is unknown.
    pub rps_ci95_low: Option<f64>,
    pub rps_ci95_high: Option<f64>,
    /// Coefficient of variation of requests/s over the runs; empty with
    /// one run.
    pub rps_cv: Option<f64>,
    /// The target this configuration is compared against.
    pub baseline: String,
    /// Mean over rounds of this configuration's requests/s divided by the
    /// baseline's in the same round; empty when no round has both.
    pub ratio_to_baseline: Option<f64>,
    pub ratio_ci95_low: Option<f64>,
    pub ratio_ci95_high: Option<f64>,
    /// Server CPU time per response (µs): every completed response, 2xx
    /// or not, cost the server its CPU. Totals over the runs; empty when
    /// the server was not watched (url:) or answered nothing.
    pub server_cpu_us_per_req: Option<f64>,
    /// Server context switches (voluntary + involuntary) per completed
    /// response, likewise.
    pub server_ctx_switches_per_req: Option<f64>,
    /// The busiest load-generator thread's CPU as % of the run's wall
    /// time, the highest over the runs (what `client_bound` reads).
    pub client_cpu_pct: f64,
    /// Any run was client-bound / cpu-saturated.
    pub client_bound: bool,
    pub cpu_saturated: bool,
    /// More than one run and their requests/s disagree (CV > 10 %).
    pub noisy: bool,
    /// A run was shorter than 100 ms: its CPU figures are rough.
    pub cpu_rough: bool,
    /// Answers with a 2xx or 3xx status, summed over the runs.
    pub ok_responses: u64,
    /// ab's "Requests per second": every complete response, whatever its
    /// status. Kept for ab's tables; throughput is `rps_mean`.
    pub requests_per_second_mean: f64,
    pub requests_per_second_sd: f64,
    pub time_per_request_ms_mean: f64,
    pub time_per_request_ms_sd: f64,
    pub time_per_request_all_ms_mean: f64,
    pub time_per_request_all_ms_sd: f64,
    pub p50_ms_mean: f64,
    pub p50_ms_sd: f64,
    pub p99_ms_mean: f64,
    pub p99_ms_sd: f64,
    /// Summed, not averaged: a failure in any repeat must show.
    pub failed: u64,
    pub non_2xx: u64,
    /// Beside slow clients: the same client's p99 and failed requests
    /// with none (its `none` cell); empty otherwise.
    pub no_slow_p99_ms: Option<f64>,
    pub no_slow_failed: Option<u64>,
    pub server_cpu_pct_mean: f64,
    pub server_cpu_pct_sd: f64,
    pub server_rss_peak_kb_mean: f64,
    pub server_rss_peak_kb_sd: f64,
    /// The load generator's CPU % over the run, all threads together.
    pub client_cpu_pct_mean: f64,
    pub client_cpu_pct_sd: f64,
    /// E4: mean time per request of repeats 1-3, 2-4 and 3-5; empty when
    /// those repeats were not all measured.
    pub window_1_3_ms: Option<f64>,
    pub window_2_4_ms: Option<f64>,
    pub window_3_5_ms: Option<f64>,
    /// Answers that broke a rule yet counted as answered, summed over the
    /// runs; empty when a run did not record them (an older raw.csv).
    pub violations: Option<u64>,
    /// The kernel's TCP counters summed over the runs: the whole network
    /// namespace, other traffic included. Empty when a run's could not be
    /// read.
    pub tcp_listen_overflows: Option<u64>,
    pub tcp_listen_drops: Option<u64>,
    pub tcp_syn_retrans: Option<u64>,
    pub tcp_out_rsts: Option<u64>,
    pub tcp_attempt_fails: Option<u64>,
    /// Connects beyond loadlab's own that ActiveOpens rose by, summed over
    /// the runs where they were more than noise: other programs' traffic
    /// in the namespace during the runs.
    pub tcp_other_opens: Option<u64>,
    /// A run was measured while another target burned CPU with no load of
    /// its own (raw.csv's `disturbed_by`).
    pub disturbed: bool,
    /// Open loop: requests put on the wire per second, mean over the
    /// runs; empty for a closed-loop cell (or an older raw.csv).
    pub achieved_rate_mean: Option<f64>,
    /// Open loop: a run fell short of the offered rate (raw.csv's
    /// `achieved_rate` below 95 % of `rate`).
    pub rate_short: bool,
    /// The server's syscalls per completed request, over the runs perf
    /// counted; empty where it did not (see `accounting`).
    pub syscalls_per_req: Option<f64>,
    /// Of those, by kind (raw.csv's `server_sys_*`).
    pub sys_reads_per_req: Option<f64>,
    pub sys_writes_per_req: Option<f64>,
    pub sys_epoll_wait_per_req: Option<f64>,
    pub sys_io_uring_enter_per_req: Option<f64>,
    pub sys_accept_per_req: Option<f64>,
    pub sys_close_per_req: Option<f64>,
    pub sys_futex_per_req: Option<f64>,
    pub sys_clone_exit_per_req: Option<f64>,
    pub sys_poll_per_req: Option<f64>,
    pub sys_memory_per_req: Option<f64>,
    pub sys_thread_setup_per_req: Option<f64>,
    pub sys_sockopt_per_req: Option<f64>,
    pub sys_other_per_req: Option<f64>,
    /// Context switches per request from perf's inherited counter.
    pub switches_counted_per_req: Option<f64>,
    /// io_uring submissions per request by opcode, as `op=n` pairs;
    /// empty for a server that submitted none.
    pub ring_ops_per_req: Option<String>,
    /// µs per request the server's threads waited, ready, for a CPU: a
    /// lower bound where threads exited mid-run.
    pub runq_wait_us_per_req: Option<f64>,
    /// Forced (involuntary) context switches per request, from /proc: a
    /// lower bound where threads exited mid-run.
    pub involuntary_per_req: Option<f64>,
    /// The share of the server's CPU time spent in user space, %.
    pub cpu_user_pct: Option<f64>,
}
}

/// The sum of `f` over `g`'s runs, or unknown when one run's is.
fn sum_known(g: &Group, f: impl Fn(&RawRow) -> Option<u64>) -> Option<u64> {
    g.runs
        .iter()
        .try_fold(0u64, |a, r| Some(a.saturating_add(f(r)?)))
}

/// The windows E4 reports: the first run pays for warm-up, so the mean of
/// runs 1-3 is compared with 2-4 and 3-5.
pub const WINDOWS: [(u64, u64); 3] = [(1, 3), (2, 4), (3, 5)];

/// Mean time per request over repeats `first..=last`, or `None` unless
/// every one of those repeats was measured.
pub fn window(g: &Group, first: u64, last: u64) -> Option<f64> {
    let mut v = Vec::new();
    for rep in first..=last {
        let at: Vec<f64> = g
            .runs
            .iter()
            .filter(|r| r.repeat == rep)
            .map(|r| r.time_per_request_ms)
            .collect();
        if at.is_empty() {
            return None;
        }
        v.extend(at);
    }
    Some(mean_sd(&v).0)
}

impl SummaryRow {
    pub fn of(g: &Group) -> SummaryRow {
        let (rps, rps_sd) = g.stat(|r| r.requests_per_second);
        let (tpr, tpr_sd) = g.stat(|r| r.time_per_request_ms);
        let (tpra, tpra_sd) = g.stat(|r| r.time_per_request_all_ms);
        let (p50, p50_sd) = g.stat(|r| r.p50_ms);
        let (p99, p99_sd) = g.stat(|r| r.p99_ms);
        let (cpu, cpu_sd) = g.stat(|r| r.server_cpu_pct);
        let (rss, rss_sd) = g.stat(|r| r.server_rss_peak_kb as f64);
        let (ccpu, ccpu_sd) = g.stat(|r| r.client_cpu_pct);
        let rps_i = g.rps();
        let ci = rps_i.ci95();
        let complete: u64 = g.runs.iter().map(|r| r.complete).sum();
        // No RSS sample means loadlab did not watch the server (url:), so
        // its CPU is unknown, not zero.
        let watched = g.runs.iter().any(|r| r.server_rss_peak_kb > 0);
        // A watched server that answered cannot have used no CPU at all:
        // a total of 0 means the figure was not recorded (rows written
        // before the lab measured it), so it is unknown, not free.
        let per_req =
            |total: f64| (watched && complete > 0 && total > 0.0).then(|| total / complete as f64);
        let mut row = SummaryRow {
            runs: g.runs.len(),
            warmup_runs: g.warmup_runs,
            error_runs: g.error_runs,
            rps_mean: rps_i.mean,
            rps_ci95_low: ci.map(|c| c.0),
            rps_ci95_high: ci.map(|c| c.1),
            rps_cv: rps_i.known_cv(),
            server_cpu_us_per_req: per_req(
                g.runs.iter().map(|r| r.server_cpu_ms).sum::<f64>() * 1000.0,
            ),
            server_ctx_switches_per_req: per_req(
                g.runs.iter().map(|r| r.server_ctx_switches).sum::<u64>() as f64,
            ),
            client_cpu_pct: g
                .runs
                .iter()
                .map(|r| r.client_thread_max_pct)
                .fold(0.0, f64::max),
            client_bound: g.runs.iter().any(|r| r.client_bound),
            cpu_saturated: g.runs.iter().any(|r| r.cpu_saturated),
            noisy: rps_i.noisy(),
            cpu_rough: g.runs.iter().any(|r| r.time_taken_s < ROUGH_CPU_S),
            ok_responses: g.runs.iter().map(|r| r.ok_responses).sum(),
            requests_per_second_mean: rps,
            requests_per_second_sd: rps_sd,
            time_per_request_ms_mean: tpr,
            time_per_request_ms_sd: tpr_sd,
            time_per_request_all_ms_mean: tpra,
            time_per_request_all_ms_sd: tpra_sd,
            p50_ms_mean: p50,
            p50_ms_sd: p50_sd,
            p99_ms_mean: p99,
            p99_ms_sd: p99_sd,
            failed: g.runs.iter().map(|r| r.failed).sum(),
            non_2xx: g.runs.iter().map(|r| r.non_2xx).sum(),
            server_cpu_pct_mean: cpu,
            server_cpu_pct_sd: cpu_sd,
            server_rss_peak_kb_mean: rss,
            server_rss_peak_kb_sd: rss_sd,
            client_cpu_pct_mean: ccpu,
            client_cpu_pct_sd: ccpu_sd,
            window_1_3_ms: window(g, 1, 3),
            window_2_4_ms: window(g, 2, 4),
            window_3_5_ms: window(g, 3, 5),
            violations: sum_known(g, |r| r.violations),
            tcp_listen_overflows: sum_known(g, |r| r.tcp_listen_overflows),
            tcp_listen_drops: sum_known(g, |r| r.tcp_listen_drops),
            tcp_syn_retrans: sum_known(g, |r| r.tcp_syn_retrans),
            tcp_out_rsts: sum_known(g, |r| r.tcp_out_rsts),
            tcp_attempt_fails: sum_known(g, |r| r.tcp_attempt_fails),
            tcp_other_opens: sum_known(g, |r| {
                r.tcp_active_opens?;
                Some(other_opens(r.tcp_active_opens, r.connections_opened?).unwrap_or(0))
            }),
            disturbed: g.runs.iter().any(|r| r.disturbed_by.is_some()),
            achieved_rate_mean: g
                .runs
                .iter()
                .map(|r| r.achieved_rate)
                .collect::<Option<Vec<f64>>>()
                .filter(|v| !v.is_empty())
                .map(|v| mean_sd(&v).0),
            rate_short: g.runs.iter().any(RawRow::rate_short),
            ..SummaryRow::default()
        };
        accounting::fill(&mut row, g);
        row.set_run_config(&g.key);
        row.status = row.flags().first().copied().unwrap_or(Status::Ok);
        row
    }

    /// Every status that applies, in order of precedence (empty: ok).
    pub fn flags(&self) -> Vec<Status> {
        let failed =
            self.failed > 0 || self.error_runs > 0 || (self.ok_responses == 0 && self.non_2xx == 0);
        [
            (failed, Status::Failed),
            (self.non_2xx > 0, Status::Non2xx),
            (self.rate_short, Status::RateShort),
            (self.client_bound, Status::ClientBound),
            (self.cpu_saturated, Status::CpuSaturated),
            (self.disturbed, Status::Disturbed),
            (self.noisy, Status::Noisy),
            (self.violations.is_some_and(|v| v > 0), Status::Violations),
        ]
        .into_iter()
        .filter_map(|(on, st)| on.then_some(st))
        .collect()
    }

    /// The paired ratio to the baseline as an interval: its mean and
    /// ends, or the mean alone from one round.
    pub fn ratio(&self) -> Option<(f64, Option<(f64, f64)>)> {
        let ends = self.ratio_ci95_low.zip(self.ratio_ci95_high);
        self.ratio_to_baseline.map(|m| (m, ends))
    }

    /// Requests/s's interval ends, when there were two runs or more.
    pub fn rps_ci(&self) -> Option<(f64, f64)> {
        self.rps_ci95_low.zip(self.rps_ci95_high)
    }

    /// The configuration is the baseline itself.
    pub fn is_baseline(&self) -> bool {
        self.target == self.baseline
    }
}

crate::with_run_config! {
    /// A run that could not be made, listed on its own so it is never lost
    /// in an average.
    #[derive(Debug, Clone, Default, PartialEq, Serialize)]
    pub struct FailedRun {
        pub run_id: u64,
        ..RunConfig,
        pub repeat: u64,
        pub warmup: bool,
        pub error: String,
    }
}

impl FailedRun {
    pub(super) fn of(r: &RawRow) -> FailedRun {
        let mut f = FailedRun {
            run_id: r.run_id,
            repeat: r.repeat,
            warmup: r.warmup,
            error: r.error.clone(),
            ..FailedRun::default()
        };
        f.set_run_config(&r.run_config());
        f
    }
}

/// Everything derived from raw.csv, in report order.
#[derive(Debug, Clone, Default)]
pub struct SweepSummary {
    /// Experiments in the order they first appear in raw.csv.
    pub experiments: Vec<String>,
    pub groups: Vec<Group>,
    pub rows: Vec<SummaryRow>,
    /// In raw.csv order.
    pub failed: Vec<FailedRun>,
    /// Targets left out (nginx or go not installed), once per experiment, target
    /// and reason, in raw.csv order.
    pub skipped: Vec<FailedRun>,
    /// (experiment, baseline target) for each experiment with a measured
    /// configuration.
    pub baselines: Vec<(String, String)>,
}

impl SweepSummary {
    /// The target an experiment's comparisons are made against.
    pub fn baseline_of(&self, experiment: &str) -> Option<&str> {
        self.baselines
            .iter()
            .find(|(e, _)| e == experiment)
            .map(|(_, t)| t.as_str())
    }

    /// Every target with a measured configuration, in report order.
    pub fn targets(&self) -> Vec<&str> {
        let mut t: Vec<&str> = Vec::new();
        for g in &self.groups {
            if !t.contains(&g.key.target.as_str()) {
                t.push(&g.key.target);
            }
        }
        t
    }
}

/// Which key dimensions take more than one value among some configurations:
/// only those earn a table column or a word in a series label.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Varies {
    pub target: bool,
    pub workers: bool,
    pub cpus: bool,
    pub path: bool,
    pub keepalive: bool,
    /// Requests or duration per run.
    pub load: bool,
    pub concurrency: bool,
    /// The slow clients held beside the client (attack or count).
    pub slow: bool,
    /// The offered rate (open loop), or open against closed loop.
    pub rate: bool,
}

impl Varies {
    pub fn of<'a>(keys: impl IntoIterator<Item = &'a RunConfig>) -> Varies {
        let mut first: Option<&RunConfig> = None;
        let mut v = Varies::default();
        for k in keys {
            match first {
                None => first = Some(k),
                Some(f) => {
                    v.target |= f.target != k.target;
                    v.workers |= f.workers != k.workers;
                    v.cpus |= f.cpus != k.cpus;
                    v.path |= f.path != k.path;
                    v.keepalive |= f.keepalive != k.keepalive;
                    v.load |= (f.requests, f.duration_us()) != (k.requests, k.duration_us());
                    v.concurrency |= f.concurrency != k.concurrency;
                    v.slow |= (f.slow, f.slow_conns) != (k.slow, k.slow_conns);
                    v.rate |= f.rate.map(f64::to_bits) != k.rate.map(f64::to_bits);
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests;
