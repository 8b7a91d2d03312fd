//! One CSV row per run, for spreadsheets and scripts. The columns are
//! described in docs/schema/bench-csv.md (a test keeps the two in step).

use crate::bench::result::BenchResult;
use crate::bench::stats::Summary;
use crate::bench::verdict::Verdict;
use crate::bench::violations;

pub fn csv_header() -> &'static str {
    "url,method,concurrency,threads,keep_alive,requests,time_taken_s,complete,failed,timeouts,non_2xx,\
     in_flight_at_end,missed,requests_per_second,mean_ms,stdev_ms,min_ms,p50_ms,p90_ms,p99_ms,\
     p99_9_ms,p99_99_ms,max_ms,total_bytes,html_bytes,transfer_rate_kbps,rate,achieved_rate,\
     uncorrected_p50_ms,uncorrected_p90_ms,uncorrected_p99_ms,uncorrected_max_ms,violations,\
     violation_kinds,violation_example,verdict"
}

/// Latency columns are measured from the scheduled send time in open loop
/// (`--rate`); the `uncorrected_` columns then give the figures from the
/// actual send, and are empty in closed loop. `verdict` is last: "ok",
/// or the flags that make the row's figures not what they seem.
pub fn csv_row(r: &BenchResult) -> String {
    let s = &r.stats;
    let l = Summary::of(s.latency.reported());
    let url = r.info.url.replace('"', "\"\"");
    let open = |v: Option<String>| v.unwrap_or_default();
    let uncorrected = s.latency.open_loop().then(|| Summary::of(&s.latency.total));
    let u = |f: fn(&Summary) -> f64| open(uncorrected.as_ref().map(|x| format!("{:.3}", f(x))));
    format!(
        "\"{url}\",{},{},{},{},{},{:.6},{},{},{},{},{},{},{:.2},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{},{},{:.2},{},{},{},{},{},{},{},\"{}\",\"{}\",{}",
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
        r.transfer_rate_kbps(),
        open(r.info.rate.map(|x| x.to_string())),
        open(r.achieved_rate().map(|x| format!("{x:.2}"))),
        u(|x| x.p50),
        u(|x| x.p90),
        u(|x| x.p99),
        u(|x| x.max),
        violations::total(&s.violations),
        s.violations
            .iter()
            .map(|(k, v)| format!("{k}:{}", v.count))
            .collect::<Vec<_>>()
            .join(";"),
        s.violations
            .iter()
            .find(|(_, v)| !v.example.is_empty())
            .map_or(String::new(), |(k, v)| format!("{k}: {}", v.example))
            .replace('"', "\"\""),
        Verdict::of(r).words()
    )
}
