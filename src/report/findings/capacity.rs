//! The capacity ranking the findings open with: per setting, measured
//! capacities highest first in groups their paired per-round ratios
//! decide (`stats::rank`), then the bounds, listed apart and never ranked.

use super::undecided::{Ranked, Rankings};
use super::{Finding, Kind};
use crate::results::capacity::{Capacity, CapacityFile, Outcome};
use crate::stats::rank::{self, Order};
use crate::stats::ratio::{paired, Ratio};

/// Why a bound is a bound, for the undecided sentence.
fn why(o: Outcome) -> &'static str {
    match o {
        Outcome::Capacity => "",
        Outcome::ClientLimit => {
            "the load generator was busy at the first rate that failed (client limit: give it more CPUs with --client-cpus)"
        }
        Outcome::Below => "even the lowest rate tried missed the objective",
        Outcome::Above => "every rate up to the search's ceiling passed",
    }
}

/// Per setting: the measured capacities ranked, highest first, then the
/// bounds apart; what was decided, and what was not and why.
pub fn findings(f: &CapacityFile) -> Rankings {
    let mut out = Rankings::default();
    for s in f.settings() {
        let here: Vec<&Capacity> = f.results.iter().filter(|c| c.setting() == s).collect();
        let measured: Vec<&Capacity> = here
            .iter()
            .copied()
            .filter(|c| c.outcome == Outcome::Capacity)
            .collect();
        let mut parts = Vec::new();
        if !measured.is_empty() {
            parts.push(ranking(f, &s, &measured, &mut out));
        }
        let bounds: Vec<&&Capacity> = here.iter().filter(|c| c.outcome.is_bound()).collect();
        if !bounds.is_empty() {
            parts.push(format!(
                "bounds, not ranked (the search could not measure these): {}",
                bounds
                    .iter()
                    .map(|c| format!("{} {}", c.target, c.text()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        for o in [Outcome::ClientLimit, Outcome::Below, Outcome::Above] {
            let named: Vec<&str> = bounds
                .iter()
                .filter(|c| c.outcome == o)
                .map(|c| c.target.as_str())
                .collect();
            if !named.is_empty() {
                out.undecided.push(format!(
                    "the capacity of {} ({s}): {}",
                    named.join(", "),
                    why(o)
                ));
            }
        }
        let how = if measured.len() > 1 {
            " \"≈\" joins neighbours whose paired per-round ratio holds 1; \"then\" marks a difference its 95 % interval decides."
        } else {
            ""
        };
        out.findings.push(Finding {
            kind: Kind::Capacity,
            text: format!("At {s}: {}.{how}", parts.join("; ")),
        });
    }
    out
}

/// The measured capacities of one setting in groups, highest first; the
/// groups its rounds could not split go to `out.undecided`.
fn ranking(f: &CapacityFile, s: &str, measured: &[&Capacity], out: &mut Rankings) -> String {
    let estimates: Vec<f64> = measured.iter().map(|c| c.rate).collect();
    let by_round =
        |c: &Capacity| -> Vec<(u64, f64)> { (1..).zip(c.rounds.iter().copied()).collect() };
    // `a` is the higher: a's rounds over b's.
    let ratio = |a: usize, b: usize| {
        paired(&by_round(measured[a]), &by_round(measured[b])).map(Ratio::from)
    };
    let decided = |a: usize, b: usize| ratio(a, b).is_some_and(|r| r.decided());
    let groups = rank::groups(&estimates, Order::HighFirst, decided);
    out.decided |= groups.len() > 1;
    let mut text = format!(
        "capacity within {} (requests/s, highest first): {}",
        f.objective.text(),
        rank::sentence(&groups, |i| format!(
            "{} {}",
            measured[i].target,
            measured[i].text()
        ))
    );
    let name = |i: usize| measured[i].target.clone();
    let ranked = Ranked {
        groups: &groups,
        ratio: &ratio,
        name: &name,
        rounds: measured[0].rounds.len(),
    };
    text.push_str(&ranked.chains());
    for (members, why) in ranked.unsplit() {
        out.undecided
            .push(format!("the capacity of {members} ({s}): {why}"));
    }
    text
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
        let found = findings(&f);
        assert!(found.decided);
        let text = &found.findings[0].text;
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
        let why = found.undecided.join("; ");
        assert!(
            why.contains("the capacity of fast (keep-alive on, c=50): the load generator was busy at the first rate that failed (client limit")
                && why.contains("the capacity of mid2 ≈ mid (keep-alive on, c=50): within ±"),
            "{why}"
        );
        let t = crate::report::capacity::table(&f).to_markdown(2);
        assert!(
            t.contains("| fast | on | 50 | ≥ 64,000 (client limit) | 0 |"),
            "{t}"
        );
    }

    #[test]
    fn a_chain_whose_ends_differ_is_said_as_such() {
        // Each neighbour's paired ratio holds 1 (round-to-round swings of
        // a few %), but 10,000 against 9,000 is decided.
        let f = CapacityFile {
            schema: CAPACITY_SCHEMA.into(),
            objective: Objective::default(),
            run_s: 0.5,
            results: vec![
                cap("a", Outcome::Capacity, &[10000.0, 10100.0, 9900.0]),
                cap("b", Outcome::Capacity, &[9700.0, 9300.0, 9500.0]),
                cap("c", Outcome::Capacity, &[9000.0, 9100.0, 8900.0]),
            ],
            common_rate: None,
        };
        let found = findings(&f);
        let text = &found.findings[0].text;
        assert!(
            text.contains("a 10,000 (")
                && text.contains(") ≈ b 9,500 (")
                && text.contains(") ≈ c 9,000 ("),
            "{text}"
        );
        assert!(
            text.contains(
                "(a and c, the ends of one \"≈\" chain, differ: each is only ≈ its neighbour)"
            ),
            "{text}"
        );
        assert!(!found.decided);
        assert!(found.undecided[0]
            .starts_with("the capacity of a ≈ b ≈ c (keep-alive on, c=50): within ±"));
    }
}
