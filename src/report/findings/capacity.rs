//! The capacity ranking the findings open with: per setting, measured
//! capacities highest first in groups their paired per-round ratios
//! decide (`stats::rank`), then the bounds, listed apart and never ranked.

use super::{Finding, Kind};
use crate::results::capacity::{Capacity, CapacityFile, Outcome};
use crate::stats::rank::{self, Order};
use crate::stats::ratio::{paired, Ratio};

/// "keep-alive on, c=50".
fn setting(c: &Capacity) -> String {
    format!(
        "keep-alive {}, c={}",
        if c.keepalive { "on" } else { "off" },
        c.concurrency
    )
}

/// Per setting: the measured capacities ranked, highest first, then the
/// bounds apart; and whether a ranking decided anything.
pub fn findings(f: &CapacityFile) -> (Vec<Finding>, bool) {
    let mut out = Vec::new();
    let mut decided_any = false;
    let mut settings: Vec<String> = f.results.iter().map(setting).collect();
    settings.dedup();
    for s in settings {
        let here: Vec<&Capacity> = f.results.iter().filter(|c| setting(c) == s).collect();
        let measured: Vec<&Capacity> = here
            .iter()
            .copied()
            .filter(|c| c.outcome == Outcome::Capacity)
            .collect();
        let mut parts = Vec::new();
        if !measured.is_empty() {
            let estimates: Vec<f64> = measured.iter().map(|c| c.rate).collect();
            let by_round =
                |c: &Capacity| -> Vec<(u64, f64)> { (1..).zip(c.rounds.iter().copied()).collect() };
            // `a` is the higher: decided when a's rounds over b's have an
            // interval that excludes 1.
            let groups = rank::groups(&estimates, Order::HighFirst, |a, b| {
                paired(&by_round(measured[a]), &by_round(measured[b]))
                    .is_some_and(|i| Ratio::from(i).decided())
            });
            decided_any |= groups.len() > 1;
            parts.push(format!(
                "capacity within {} (requests/s, highest first): {}",
                f.objective.text(),
                rank::sentence(&groups, |i| format!(
                    "{} {}",
                    measured[i].target,
                    measured[i].text()
                ))
            ));
        }
        let bounds: Vec<String> = here
            .iter()
            .filter(|c| c.outcome.is_bound())
            .map(|c| format!("{} {}", c.target, c.text()))
            .collect();
        if !bounds.is_empty() {
            parts.push(format!(
                "bounds, not ranked (the search could not measure these): {}",
                bounds.join(", ")
            ));
        }
        let how = if measured.len() > 1 {
            " \"≈\" joins neighbours whose paired per-round ratio holds 1; \"then\" marks a difference its 95 % interval decides."
        } else {
            ""
        };
        out.push(Finding {
            kind: Kind::Capacity,
            text: format!("At {s}: {}.{how}", parts.join("; ")),
        });
    }
    (out, decided_any)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::capacity::{Objective, CAPACITY_SCHEMA};

    fn cap(target: &str, outcome: Outcome, rounds: &[f64]) -> Capacity {
        let i = crate::stats::Interval::of(rounds);
        Capacity {
            target: target.into(),
            workers: 1,
            cpus: 1,
            path: "/".into(),
            keepalive: true,
            concurrency: 50,
            outcome,
            rate: if rounds.is_empty() { 64000.0 } else { i.mean },
            ci95_low: i.ci95().map(|x| x.0),
            ci95_high: i.ci95().map(|x| x.1),
            rounds: rounds.to_vec(),
            last_pass: Some(64000.0),
            first_fail: Some(128000.0),
            client_busy_pct: Some(97.0),
            probes: vec![],
        }
    }

    #[test]
    fn capacities_are_ranked_and_bounds_stand_apart() {
        let f = CapacityFile {
            schema: CAPACITY_SCHEMA.into(),
            objective: Objective::default(),
            run_s: 0.5,
            results: vec![
                cap("slow", Outcome::Capacity, &[1900.0, 1950.0, 1920.0]),
                cap("fast", Outcome::ClientLimit, &[]),
                cap("mid", Outcome::Capacity, &[9000.0, 9400.0, 9100.0]),
                cap("mid2", Outcome::Capacity, &[9100.0, 9200.0, 9300.0]),
            ],
            common_rate: None,
        };
        let (found, decided) = findings(&f);
        assert!(decided);
        let text = &found[0].text;
        assert!(
            text.contains("highest first): mid2 9,200 (")
                && text.contains(") ≈ mid 9,167 (")
                && text.contains(", then slow 1,923 ("),
            "{text}"
        );
        assert!(
            text.contains("bounds, not ranked (the search could not measure these): fast ≥ 64,000 (client limit)"),
            "{text}"
        );
        let t = crate::report::capacity::table(&f).to_markdown(2);
        assert!(
            t.contains("| fast | on | 50 | ≥ 64,000 (client limit) | 0 |"),
            "{t}"
        );
    }
}
