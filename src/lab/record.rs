//! Turning a planned run and what bench measured into the raw.csv row that
//! records it. The configuration columns come from the planned run, the
//! figures from the bench result, the resource columns and the flags that
//! say a run measured the wrong thing from the monitors.

use std::time::{SystemTime, UNIX_EPOCH};

use super::plan::PlannedRun;
use crate::bench::stats::Summary as LatencySummary;
use crate::bench::BenchResult;
use crate::proc::monitor::Usage;
use crate::results::config::{Configured, RunConfig};
use crate::results::raw::RawRow;

/// A load thread busy this much of a run (%) set the rate itself: the run
/// is `client_bound`, by the threshold of bench's own verdict.
pub use crate::bench::verdict::CLIENT_BOUND_PCT;
/// The CPUs client and server share, this busy all together, measured the
/// pair rather than the server: the run is `cpu_saturated`.
pub const SATURATED_PCT: f64 = 90.0;
/// Below this run length (s), CPU figures rest on a few scheduler ticks'
/// worth of work and are rough.
pub const ROUGH_CPU_BELOW_S: f64 = 0.1;

/// What the load generator used over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClientUse {
    /// All its threads, % of one CPU.
    pub cpu_pct: f64,
    /// Its busiest load thread, % of the run's wall time.
    pub busiest_thread_pct: f64,
    /// How busy the CPUs it shared with the server were (0: none shared).
    pub shared_busy_pct: f64,
}

/// Seconds since the Unix epoch, for `started_at`.
pub fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A row with `config` and no figures: a target that did not start or was
/// left out (the caller sets `error`). Rows are numbered when recorded.
pub fn config_row(config: &RunConfig) -> RawRow {
    let mut row = RawRow {
        started_at: now_secs(),
        ..RawRow::default()
    };
    row.set_run_config(config);
    row
}

/// The row of a planned run, before its figures are in.
pub fn run_row(run: &PlannedRun) -> RawRow {
    let mut row = config_row(&run.config);
    row.repeat = run.repeat;
    row.warmup = run.warmup;
    row
}

/// Fills in ab's figures and latency tables from a bench result.
pub fn fill_measured(row: &mut RawRow, r: &BenchResult) {
    let s = &r.stats;
    row.time_taken_s = r.seconds();
    row.complete = s.complete;
    row.failed = s.failed();
    row.non_2xx = s.non_2xx;
    row.timeouts = s.timeouts;
    row.total_bytes = s.total_bytes;
    row.html_bytes = s.html_bytes;
    row.requests_per_second = r.requests_per_second();
    row.time_per_request_ms = r.time_per_request_ms();
    row.time_per_request_all_ms = r.time_per_request_all_ms();
    row.transfer_kbps = r.transfer_rate_kbps();
    row.ok_responses = s.answered_ok();
    row.ok_rps = row.ok_responses as f64 / r.seconds().max(1e-9);
    row.achieved_rate = r.achieved_rate();
    let l = &s.latency;
    let connect = LatencySummary::of(&l.connect);
    let processing = LatencySummary::of(&l.processing);
    let waiting = LatencySummary::of(&l.waiting);
    let total = LatencySummary::of(&l.total);
    (
        row.connect_min_ms,
        row.connect_mean_ms,
        row.connect_sd_ms,
        row.connect_median_ms,
        row.connect_max_ms,
    ) = five(&connect);
    (
        row.processing_min_ms,
        row.processing_mean_ms,
        row.processing_sd_ms,
        row.processing_median_ms,
        row.processing_max_ms,
    ) = five(&processing);
    (
        row.waiting_min_ms,
        row.waiting_mean_ms,
        row.waiting_sd_ms,
        row.waiting_median_ms,
        row.waiting_max_ms,
    ) = five(&waiting);
    (
        row.total_min_ms,
        row.total_mean_ms,
        row.total_sd_ms,
        row.total_median_ms,
        row.total_max_ms,
    ) = five(&total);
    row.p50_ms = total.p50;
    row.p66_ms = total.p66;
    row.p75_ms = total.p75;
    row.p80_ms = total.p80;
    row.p90_ms = total.p90;
    row.p95_ms = total.p95;
    row.p98_ms = total.p98;
    row.p99_ms = total.p99;
    row.p99_9_ms = total.p99_9;
    row.p100_ms = total.max;
    fill_evidence(row, r);
}

/// Fills in the violations and the kernel's TCP counters; a counter the
/// kernel did not give stays unknown.
fn fill_evidence(row: &mut RawRow, r: &BenchResult) {
    let s = &r.stats;
    row.violations = Some(crate::bench::violations::total(&s.violations));
    let kinds: Vec<String> = s
        .violations
        .iter()
        .map(|(k, seen)| format!("{k} {}", seen.count))
        .collect();
    // None, not "": an empty field reads back as None anyway.
    row.violation_kinds = (!kinds.is_empty()).then(|| kinds.join("; "));
    row.violation_closes = Some(s.violation_closes);
    row.connections_opened = Some(s.connects);
    let k = r.kernel_tcp.as_ref();
    let get = |name: &str| k.and_then(|k| k.get(name).copied());
    row.tcp_listen_overflows = get("ListenOverflows");
    row.tcp_listen_drops = get("ListenDrops");
    row.tcp_syncookies_sent = get("SyncookiesSent");
    row.tcp_syn_retrans = get("TCPSynRetrans");
    row.tcp_retrans_segs = get("RetransSegs");
    row.tcp_attempt_fails = get("AttemptFails");
    row.tcp_estab_resets = get("EstabResets");
    row.tcp_out_rsts = get("OutRsts");
    row.tcp_active_opens = get("ActiveOpens");
}

/// Fills in the server's and the client's resource use, and the flags
/// that say the client or the pair, not the server, set the rate.
pub fn fill_resources(row: &mut RawRow, server: &Usage, client: &ClientUse) {
    row.server_cpu_pct = server.cpu_pct;
    row.server_cpu_ms = server.cpu_ms;
    row.server_ctx_switches = server.ctx_switches;
    row.server_rss_peak_kb = server.peak_rss_kb;
    // Only a server loadlab watched has these (not a `url:` target).
    if server.samples > 0 {
        row.server_runq_wait_ms = Some(server.runq_wait_ms);
        row.server_ctx_involuntary = Some(server.ctx_involuntary);
        row.server_cpu_user_ms = Some(server.cpu_user_ms);
        row.server_cpu_system_ms = Some(server.cpu_system_ms);
    }
    row.client_cpu_pct = client.cpu_pct;
    row.client_thread_max_pct = client.busiest_thread_pct;
    row.shared_cpu_busy_pct = client.shared_busy_pct;
    row.client_bound = client.busiest_thread_pct >= CLIENT_BOUND_PCT;
    row.cpu_saturated = client.shared_busy_pct >= SATURATED_PCT;
}

/// ab's connection-times columns: min, mean, sd, median, max.
fn five(s: &LatencySummary) -> (f64, f64, f64, f64, f64) {
    (s.min, s.mean, s.stdev, s.p50, s.max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_start_at_ninety_percent() {
        let mut row = RawRow::default();
        let server = Usage {
            cpu_pct: 50.0,
            cpu_ms: 250.0,
            ctx_switches: 7,
            peak_rss_kb: 100,
            samples: 3,
            ..Usage::default()
        };
        let mut client = ClientUse {
            cpu_pct: 120.0,
            busiest_thread_pct: 89.9,
            shared_busy_pct: 89.9,
        };
        fill_resources(&mut row, &server, &client);
        assert!(!row.client_bound && !row.cpu_saturated);
        assert_eq!((row.server_cpu_ms, row.server_ctx_switches), (250.0, 7));
        client.busiest_thread_pct = 90.0;
        client.shared_busy_pct = 95.0;
        fill_resources(&mut row, &server, &client);
        assert!(row.client_bound && row.cpu_saturated);
        assert_eq!(row.client_thread_max_pct, 90.0);
    }
}
