//! One CSV row per run, for spreadsheets and scripts. The columns are
//! described in docs/schema/bench-csv.md (a test keeps the two in step).

use crate::bench::result::BenchResult;
use crate::bench::stats::Summary;

pub fn csv_header() -> &'static str {
    "url,method,concurrency,threads,keep_alive,requests,time_taken_s,complete,failed,timeouts,non_2xx,\
     in_flight_at_end,missed,requests_per_second,mean_ms,stdev_ms,min_ms,p50_ms,p90_ms,p99_ms,\
     p99_9_ms,p99_99_ms,max_ms,total_bytes,html_bytes,transfer_rate_kbps"
}

pub fn csv_row(r: &BenchResult) -> String {
    let s = &r.stats;
    let l = Summary::of(&s.latency.total);
    let url = r.info.url.replace('"', "\"\"");
    format!(
        "\"{url}\",{},{},{},{},{},{:.6},{},{},{},{},{},{},{:.2},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{},{},{:.2}",
        r.info.method,
        r.info.concurrency,
        r.info.threads,
        r.info.keep_alive,
        r.info.requests.map_or(String::new(), |n| n.to_string()),
        r.seconds(),
        s.complete,
        s.failed(),
        s.timeouts,
        s.non_2xx,
        s.in_flight_at_end,
        s.missed,
        r.requests_per_second(),
        l.mean,
        l.stdev,
        l.min,
        l.p50,
        l.p90,
        l.p99,
        l.p99_9,
        l.p99_99,
        l.max,
        s.total_bytes,
        s.html_bytes,
        r.transfer_rate_kbps()
    )
}
