//! Rankings of the cells of a setting (everything but the target), lowest
//! first, in groups that cannot be told apart (`stats::rank` over paired
//! per-round ratios): by server CPU per request, which separates servers
//! even where the client set the rate, so it is stated first; and by p99
//! latency at an offered rate, latency at equal load.

use super::{at, but_target, sets, Cell, Finding, Kind, Words};
use crate::report::num::fixed;
use crate::stats::rank::{self, Order};
use crate::stats::ratio::{paired, Ratio};
use crate::stats::Interval;

/// Server CPU µs per completed response in each round of a cell; rounds
/// where the server was not watched or answered nothing are left out.
fn by_round(c: &Cell) -> Vec<(u64, f64)> {
    c.g.runs
        .iter()
        .filter(|r| r.server_rss_peak_kb > 0 && r.complete > 0 && r.server_cpu_ms > 0.0)
        .map(|r| (r.repeat, r.server_cpu_ms * 1000.0 / r.complete as f64))
        .collect()
}

/// p99 latency (ms, from the scheduled send) in each round of an
/// open-loop cell; nothing for a closed-loop one, whose latency depends
/// on how fast it served.
fn p99_by_round(c: &Cell) -> Vec<(u64, f64)> {
    if c.g.key.rate.is_none() {
        return Vec::new();
    }
    c.g.runs.iter().map(|r| (r.repeat, r.p99_ms)).collect()
}

/// What a ranking orders the cells by.
struct Measure {
    kind: Kind,
    by_round: fn(&Cell) -> Vec<(u64, f64)>,
    /// "server CPU per request (µs), cheapest first".
    what: &'static str,
    decimals: usize,
}

const COST: Measure = Measure {
    kind: Kind::Cost,
    by_round,
    what: "server CPU per request (µs), cheapest first",
    decimals: 1,
};

const LATENCY: Measure = Measure {
    kind: Kind::LatencyAtRate,
    by_round: p99_by_round,
    what: "p99 latency at the offered rate (ms, from each request's scheduled send), lowest first",
    decimals: 2,
};

/// The cost rankings, then latency at equal load; and whether any of
/// them decided a difference.
pub fn rankings(cells: &[Cell], w: &Words) -> (Vec<Finding>, bool) {
    let (mut out, cost) = ranked(cells, w, &COST);
    let (latency, lat) = ranked(cells, w, &LATENCY);
    out.extend(latency);
    (out, cost || lat)
}

/// One ranking per setting with two targets or more that have the
/// measure in two rounds or more; and whether any decided a difference.
fn ranked(cells: &[Cell], w: &Words, m: &Measure) -> (Vec<Finding>, bool) {
    let mut out = Vec::new();
    let mut decided_any = false;
    for set in sets(cells, but_target) {
        let ok: Vec<(Cell, Vec<(u64, f64)>)> = set
            .into_iter()
            .filter(|c| !c.r.status.is_broken())
            .map(|c| (c, (m.by_round)(&c)))
            .filter(|(_, v)| v.len() >= 2)
            .collect();
        if ok.len() < 2 {
            continue;
        }
        let spread: Vec<Interval> = ok
            .iter()
            .map(|(_, v)| Interval::of(&v.iter().map(|x| x.1).collect::<Vec<_>>()))
            .collect();
        let estimates: Vec<f64> = spread.iter().map(|i| i.mean).collect();
        // `a` is the cheaper of the pair: decided when b's cost over a's,
        // round by round, has an interval that excludes 1.
        let groups = rank::groups(&estimates, Order::LowFirst, |a, b| {
            paired(&ok[b].1, &ok[a].1).is_some_and(|i| Ratio::from(i).decided())
        });
        decided_any |= groups.len() > 1;
        let named = rank::sentence(&groups, |i| {
            format!(
                "{} {} ± {}",
                w.target(&ok[i].0.g.key),
                fixed(spread[i].mean, m.decimals),
                fixed(spread[i].half, m.decimals)
            )
        });
        out.push(Finding {
            kind: m.kind,
            text: format!(
                "{}{}: {named}. \"≈\" joins neighbours whose paired per-round ratio holds 1; \"then\" marks a difference its 95 % interval decides.",
                at(&w.setting(&ok[0].0.g.key, true)),
                m.what
            ),
        });
    }
    (out, decided_any)
}
