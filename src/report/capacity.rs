//! A capacity search's results in the report (capacity.json): the table
//! of each target's capacity within the objective, its interval or the
//! bound it is, and the ranking the findings open with: measured
//! capacities highest first in groups their paired per-round ratios
//! decide, bounds listed apart and never ranked.

use super::findings::{Finding, Kind};
use super::table::{Align, Table};
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

/// The capacity table: one line per target and setting.
pub fn table(f: &CapacityFile) -> Table {
    let mut t = Table::new(
        "capacity",
        "Capacity",
        &[
            ("target", Align::Left),
            ("keep-alive", Align::Left),
            ("c", Align::Right),
            ("requests/s", Align::Right),
            ("rounds", Align::Right),
            ("last passed", Align::Right),
            ("first failed", Align::Right),
            ("client busy", Align::Right),
            ("why the first failure failed", Align::Left),
        ],
    );
    t.note = Some(format!(
        "The highest offered rate served with no failed request, at least 95 % of the rate sent and {} ({} s probes): a ladder doubling from the first rate, bisection to 5 %, then the final bracket bisected again in interleaved rounds, whose mean and 95 % interval are shown. A rate failed only when it failed twice. \"≥ … (client limit)\": the load generator's busiest thread was at least 80 % busy at the first failing rate, so the server's capacity is higher than shown and unknown; \"<\": even the first rate failed.",
        f.objective.text(),
        f.run_s
    ));
    let n = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{x:.0}"));
    for c in &f.results {
        let why = c
            .probes
            .iter()
            .find(|p| Some(p.rate) == c.first_fail && !p.passed)
            .map_or(String::new(), |p| p.why.clone());
        t.push(vec![
            c.target.clone(),
            if c.keepalive { "on" } else { "off" }.into(),
            c.concurrency.to_string(),
            c.text(),
            c.rounds.len().to_string(),
            n(c.last_pass),
            n(c.first_fail),
            c.client_busy_pct
                .map_or("–".to_string(), |b| format!("{b:.0} %")),
            why,
        ]);
    }
    t
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
        let t = table(&f).to_markdown(2);
        assert!(
            t.contains("| fast | on | 50 | ≥ 64,000 (client limit) | 0 |"),
            "{t}"
        );
    }
}
