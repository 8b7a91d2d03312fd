//! The capacity search against a sweep's started targets (`--capacity`):
//! per target and keep-alive setting, the highest offered rate served
//! with no failed request, the rate kept and the objective met (`search`
//! decides which rate to try), then the final bracket bisected again in
//! interleaved rounds for an interval. Writes nothing itself: the caller
//! keeps the result in capacity.json.

pub mod search;
pub mod settings;

use super::measure::{measure, Placement};
use super::plan::{Instance, Load, PlannedRun, SweepPlan};
use crate::proc::target::Running;
use crate::results::capacity::{
    Capacity, CapacityFile, Objective, Outcome, Probe, CAPACITY_SCHEMA,
};
use crate::results::raw::RawRow;
use crate::stats::Interval;
use search::{Search, Verdict};
pub use settings::CapacityPlan;

/// One target to search: its instance, the running process and where
/// the load generator goes.
pub struct Subject<'a> {
    pub inst: &'a Instance<'a>,
    pub running: &'a Running,
    pub place: &'a Placement,
}

/// Searches every subject in every keep-alive setting; `note` hears one
/// line per result. Stops early (keeping what was found) when `stop`.
pub fn search_all(
    plan: &SweepPlan,
    cap: &CapacityPlan,
    subjects: &[Subject],
    stop: &(dyn Fn() -> bool + Sync),
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<CapacityFile> {
    let mut results: Vec<(usize, Capacity)> = Vec::new();
    for &keepalive in &cap.keepalive {
        for (i, s) in subjects.iter().enumerate() {
            if stop() {
                break;
            }
            let mut c = empty(s, cap, keepalive);
            let mut search = Search::new(cap.floor, cap.ceiling, CapacityPlan::TOLERANCE);
            while let Some(rate) = search.next() {
                let Some(p) = probe(plan, cap, s, keepalive, rate, 0, stop)? else {
                    break;
                };
                let v = Verdict {
                    passed: p.passed,
                    client_busy_pct: p.client_busy_pct,
                };
                c.probes.push(p);
                search.record(rate, v);
            }
            let Some(found) = search.found() else { break };
            (c.outcome, c.rate) = (found.outcome, found.rate);
            (c.last_pass, c.first_fail) = (found.last_pass, found.first_fail);
            c.client_busy_pct = found.client_busy_pct;
            results.push((i, c));
        }
    }
    rounds(plan, cap, subjects, &mut results, stop)?;
    for (_, c) in &results {
        note(&format!(
            "capacity of {} (keep-alive {}, c={}): {} requests/s within {}",
            c.target,
            if c.keepalive { "on" } else { "off" },
            c.concurrency,
            c.text(),
            cap.objective.text()
        ));
    }
    let results: Vec<Capacity> = results.into_iter().map(|(_, c)| c).collect();
    let common_rate = cap.common_share.and_then(|share| common(&results, share));
    Ok(CapacityFile {
        schema: CAPACITY_SCHEMA.into(),
        objective: cap.objective,
        run_s: cap.run_time.as_secs_f64(),
        results,
        common_rate,
    })
}

/// Each round bisects every measured capacity's bracket again, the
/// targets taken in turn (reversed on even rounds, as the sweep's rounds
/// are); a capacity's estimate and interval are over its rounds.
fn rounds(
    plan: &SweepPlan,
    cap: &CapacityPlan,
    subjects: &[Subject],
    results: &mut [(usize, Capacity)],
    stop: &(dyn Fn() -> bool + Sync),
) -> anyhow::Result<()> {
    for round in 1..=cap.rounds {
        let mut turn: Vec<usize> = (0..results.len()).collect();
        if round % 2 == 0 {
            turn.reverse();
        }
        for k in turn {
            let (i, c) = &mut results[k];
            let (Outcome::Capacity, Some(lo), Some(hi)) = (c.outcome, c.last_pass, c.first_fail)
            else {
                continue;
            };
            let bracket = (
                lo / CapacityPlan::ROUND_WIDEN,
                hi * CapacityPlan::ROUND_WIDEN,
            );
            let mut failure = None;
            let est = search::round(bracket, cap.round_steps, |rate| {
                match probe(
                    plan,
                    cap,
                    &subjects[*i],
                    c.keepalive,
                    rate,
                    round as u64,
                    stop,
                ) {
                    Ok(Some(p)) => {
                        let passed = p.passed;
                        c.probes.push(p);
                        Some(passed)
                    }
                    Ok(None) => None,
                    Err(e) => {
                        failure = Some(e);
                        None
                    }
                }
            });
            if let Some(e) = failure {
                return Err(e);
            }
            let Some(est) = est else {
                return Ok(());
            };
            c.rounds.push(est);
            let i = Interval::of(&c.rounds);
            c.rate = i.mean;
            (c.ci95_low, c.ci95_high) = (i.ci95().map(|x| x.0), i.ci95().map(|x| x.1));
        }
    }
    Ok(())
}

/// A result with nothing found yet.
fn empty(s: &Subject, cap: &CapacityPlan, keepalive: bool) -> Capacity {
    Capacity {
        target: s.inst.config.target.clone(),
        workers: s.inst.config.workers,
        cpus: s.inst.config.cpus,
        path: cap.path.clone(),
        keepalive,
        concurrency: cap.concurrency as u64,
        outcome: Outcome::Below,
        rate: cap.floor,
        ci95_low: None,
        ci95_high: None,
        rounds: Vec::new(),
        last_pass: None,
        first_fail: None,
        client_busy_pct: None,
        probes: Vec::new(),
    }
}

/// One run at `rate`; None after Ctrl-C (the run is not kept).
fn probe(
    plan: &SweepPlan,
    cap: &CapacityPlan,
    s: &Subject,
    keepalive: bool,
    rate: f64,
    round: u64,
    stop: &(dyn Fn() -> bool + Sync),
) -> anyhow::Result<Option<Probe>> {
    let mut config = s.inst.config.clone();
    config.path = cap.path.clone();
    config.concurrency = cap.concurrency as u64;
    config.keepalive = keepalive;
    config.rate = Some(rate);
    config.duration_s = cap.run_time.as_secs_f64();
    let run = PlannedRun {
        config,
        load: Load::Duration(cap.run_time),
        repeat: 1,
        warmup: false,
    };
    let row = measure(plan, s.running, &run, s.place, 0, None, stop)?;
    if stop() {
        return Ok(None);
    }
    Ok(Some(judge(&cap.objective, rate, round, &row)))
}

/// Whether a probe's run was served: no failed request, the rate kept,
/// the objective met; and why not.
pub fn judge(objective: &Objective, rate: f64, round: u64, row: &RawRow) -> Probe {
    let latency = objective.latency_ms(row);
    let why = if !row.error.is_empty() {
        row.error.clone()
    } else if row.failed > 0 || row.non_2xx > 0 || row.ok_responses == 0 {
        format!(
            "{} failed, {} non-2xx of {} answered",
            row.failed, row.non_2xx, row.complete
        )
    } else if row.rate_short() {
        format!(
            "rate-short: {:.0} of {rate} requests/s went out",
            row.achieved_rate.unwrap_or(0.0)
        )
    } else if latency > objective.limit_ms {
        format!(
            "p{} {latency:.2} ms over {} ms",
            objective.percentile, objective.limit_ms
        )
    } else {
        String::new()
    };
    let cpu = (row.server_cpu_ms > 0.0 && row.complete > 0)
        .then(|| row.server_cpu_ms * 1000.0 / row.complete as f64);
    Probe {
        rate,
        round,
        passed: why.is_empty(),
        why,
        achieved_rate: row.achieved_rate.unwrap_or(0.0),
        latency_ms: latency,
        failed: row.failed,
        client_busy_pct: row.client_thread_max_pct,
        server_cpu_us_per_req: cpu,
    }
}

/// `share` of the lowest capacity or bound above the floor, to two
/// significant figures: a rate every such target sustains.
fn common(results: &[Capacity], share: f64) -> Option<f64> {
    let low = results
        .iter()
        .filter(|c| c.outcome != Outcome::Below)
        .map(|c| c.rate)
        .min_by(f64::total_cmp)?;
    let r = low * share;
    let scale = 10f64.powi(r.log10().floor() as i32 - 1);
    Some(((r / scale).floor() * scale).max(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_fails_for_failures_a_short_rate_or_the_objective() {
        let o = Objective::default();
        let good = RawRow {
            complete: 1000,
            ok_responses: 1000,
            p99_ms: 4.0,
            rate: Some(1000.0),
            achieved_rate: Some(990.0),
            server_cpu_ms: 20.0,
            ..RawRow::default()
        };
        let p = judge(&o, 1000.0, 0, &good);
        assert!(p.passed && p.why.is_empty(), "{p:?}");
        assert_eq!(p.server_cpu_us_per_req, Some(20.0));
        for (bad, says) in [
            (
                RawRow {
                    failed: 3,
                    ..good.clone()
                },
                "3 failed",
            ),
            (
                RawRow {
                    achieved_rate: Some(900.0),
                    ..good.clone()
                },
                "rate-short",
            ),
            (
                RawRow {
                    p99_ms: 12.0,
                    ..good.clone()
                },
                "p99 12.00 ms over 10 ms",
            ),
        ] {
            let p = judge(&o, 1000.0, 0, &bad);
            assert!(!p.passed && p.why.contains(says), "{p:?}");
        }
    }

    #[test]
    fn the_common_rate_is_a_share_of_the_lowest_found_rounded_down() {
        let c = |outcome, rate| Capacity {
            outcome,
            rate,
            ..empty_capacity()
        };
        let found = [
            c(Outcome::Capacity, 18_345.0),
            c(Outcome::ClientLimit, 64_000.0),
            c(Outcome::Below, 1000.0),
        ];
        assert_eq!(common(&found, 0.5), Some(9100.0));
        assert_eq!(common(&found[2..], 0.5), None, "nothing above the floor");
    }

    fn empty_capacity() -> Capacity {
        Capacity {
            target: "t".into(),
            workers: 0,
            cpus: 0,
            path: "/".into(),
            keepalive: true,
            concurrency: 50,
            outcome: Outcome::Below,
            rate: 0.0,
            ci95_low: None,
            ci95_high: None,
            rounds: vec![],
            last_pass: None,
            first_fail: None,
            client_busy_pct: None,
            probes: vec![],
        }
    }
}
