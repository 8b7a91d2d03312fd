//! The ranking by server CPU per request: in each setting (everything but
//! the target), the targets whose CPU loadlab watched, cheapest first, in
//! groups that cannot be told apart (`stats::rank` over paired per-round
//! ratios of cost). Cost separates servers even where the client set the
//! rate, so it is stated first.

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

/// One ranking per setting with two targets or more that have a cost in
/// two rounds or more; and whether any of them decided a difference.
pub fn rankings(cells: &[Cell], w: &Words) -> (Vec<Finding>, bool) {
    let mut out = Vec::new();
    let mut decided_any = false;
    for set in sets(cells, but_target) {
        let ok: Vec<(Cell, Vec<(u64, f64)>)> = set
            .into_iter()
            .filter(|c| !c.r.status.is_broken())
            .map(|c| (c, by_round(&c)))
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
                fixed(spread[i].mean, 1),
                fixed(spread[i].half, 1)
            )
        });
        out.push(Finding {
            kind: Kind::Cost,
            text: format!(
                "{}server CPU per request (µs), cheapest first: {named}. \"≈\" joins neighbours whose paired per-round ratio holds 1; \"then\" marks a difference its 95 % interval decides.",
                at(&w.setting(&ok[0].0.g.key, true))
            ),
        });
    }
    (out, decided_any)
}
