//! The result's merge and its JSON form.

use super::*;
use crate::bench::config::RequestSpec;
use crate::net::url::HttpUrl;

fn result(rate: Option<f64>, accept_variable_length: bool) -> BenchResult {
    let cfg = BenchConfig {
        requests: Some(10),
        concurrency: 2,
        timeout: Duration::from_secs(1),
        rate,
        variable_length: accept_variable_length,
        ..BenchConfig::new(
            HttpUrl::parse("http://127.0.0.1:9/").unwrap(),
            RequestSpec {
                method: "GET".into(),
                ..RequestSpec::default()
            },
        )
    };
    let mut stats = Stats::new(rate.is_some());
    stats.complete = 10;
    stats.missed = 1;
    stats.keep_alive_retries = 2;
    BenchResult::new(&cfg, stats, Duration::from_secs(1))
}

#[test]
fn open_and_closed_loop_runs_do_not_merge() {
    let open = result(Some(100.0), false);
    let closed = result(None, false);
    let err = BenchResult::merge(&[closed.clone(), closed.clone(), open.clone()]).unwrap_err();
    assert_eq!(err, MergeError::MixedLoops { open: 2, closed: 0 });
    let err = BenchResult::merge(&[open.clone(), closed]).unwrap_err();
    assert_eq!(err, MergeError::MixedLoops { open: 0, closed: 1 });
    assert_eq!(BenchResult::merge(&[]).unwrap_err(), MergeError::Empty);
}

#[test]
fn merged_runs_add_rates_and_counters() {
    let a = result(Some(100.0), false);
    let b = result(Some(50.0), true);
    let m = BenchResult::merge(&[a, b]).unwrap();
    assert_eq!(m.info.rate, Some(150.0));
    assert!(m.info.accept_variable_length);
    assert_eq!((m.stats.complete, m.stats.missed), (20, 2));
    assert_eq!(m.stats.keep_alive_retries, 4);
    assert_eq!(m.info.concurrency, 4);
}

#[test]
fn regression_merged_counters_wrapped_on_overflow() {
    let mut a = result(None, false);
    a.stats.complete = u64::MAX - 1;
    a.stats.status_classes[2] = u64::MAX;
    let b = result(None, false);
    let err = BenchResult::merge(&[a.clone(), b.clone()]).unwrap_err();
    assert_eq!(err, MergeError::Overflow { field: "complete" });
    assert!(err.to_string().contains("complete does not fit"), "{err}");
    // Saturated, not wrapped, where the thread merge ignores it.
    let mut s = a.stats.clone();
    assert_eq!(s.merge(&b.stats), Some("complete"));
    assert_eq!(s.complete, u64::MAX);
    assert_eq!(s.answered_ok(), u64::MAX);
    a.stats.failures.connect = u64::MAX;
    a.stats.failures.exceptions = 3;
    assert_eq!(a.stats.failed(), u64::MAX);
    // Sums that fit still merge.
    let m = BenchResult::merge(&[b.clone(), b]).unwrap();
    assert_eq!(m.stats.complete, 20);
}

#[test]
fn a_rate_below_95_percent_of_the_asked_one_is_a_shortfall() {
    // 10 requests in 1 s at --rate 100: 10% of it.
    let short = result(Some(100.0), false);
    assert_eq!(short.achieved_rate(), Some(10.0));
    let w = short.rate_shortfall().unwrap();
    assert!(
        w.starts_with("achieved 10 requests/s, 10% of --rate 100, 1 scheduled"),
        "{w}"
    );
    // 10 requests in 1 s at --rate 10.4: kept (96%).
    let kept = result(Some(10.4), false);
    assert_eq!(kept.rate_shortfall(), None);
    assert_eq!(result(None, false).achieved_rate(), None);
}

#[test]
fn json_round_trip_keeps_the_new_counters() {
    let mut r = result(Some(100.0), true);
    r.stats.latency.record_corrected(2_000, 500, 100);
    let json = BenchJson::from_result(&r);
    assert_eq!(json.achieved_rate, Some(10.0));
    // 2,000 µs behind the schedule + 100 µs connect, to 3 digits.
    let max = json.corrected_connect_ms.unwrap().max;
    assert!((2.1..2.11).contains(&max), "{max}");
    let back = json.into_result().unwrap();
    let c = back.stats.latency.corrected_connect.as_ref().unwrap();
    assert_eq!((c.len(), c.lowest_equivalent(c.max())), (1, 2100));
    assert_eq!(back.stats.missed, 1);
    assert_eq!(back.stats.keep_alive_retries, 2);
    assert!(back.info.accept_variable_length);
}
