//! Rankings of the cells of a setting (everything but the target), lowest
//! first, in groups that cannot be told apart (`stats::rank` over paired
//! per-round ratios): by server CPU per request, which separates servers
//! even where the client set the rate, so it is stated first; and by p99
//! latency at an offered rate, latency at equal load.

use super::undecided::{Ranked, Rankings};
use super::{at, but_target, sets, Cell, Finding, Kind, Words};
use crate::report::num::fixed;
use crate::stats::rank::{self, Order};
use crate::stats::ratio::{paired, Ratio};
use crate::stats::Interval;

/// Server CPU µs per completed response in each round of a cell.
fn by_round(c: &Cell) -> Vec<(u64, f64)> {
    c.g.cpu_us_by_round()
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
    /// "server CPU per request": what the undecided sentence names.
    short: &'static str,
    decimals: usize,
}

const COST: Measure = Measure {
    kind: Kind::Cost,
    by_round,
    what: "server CPU per request (µs), cheapest first",
    short: "server CPU per request",
    decimals: 1,
};

const LATENCY: Measure = Measure {
    kind: Kind::LatencyAtRate,
    by_round: p99_by_round,
    what: "p99 latency at the offered rate (ms, from each request's scheduled send), lowest first",
    short: "p99 at the offered rate",
    decimals: 2,
};

/// The cost rankings, then latency at equal load.
pub fn rankings(cells: &[Cell], w: &Words) -> Rankings {
    let mut out = Rankings::default();
    for m in [&COST, &LATENCY] {
        for set in sets(cells, but_target) {
            ranked(&set, w, m, &mut out);
        }
    }
    out
}

/// The ranking of one setting, when two targets or more have the measure
/// in two rounds or more.
fn ranked(set: &[Cell], w: &Words, m: &Measure, out: &mut Rankings) {
    let ok: Vec<(Cell, Vec<(u64, f64)>)> = set
        .iter()
        .filter(|c| !c.r.status.is_broken())
        .map(|c| (*c, (m.by_round)(c)))
        .filter(|(_, v)| v.len() >= 2)
        .collect();
    if ok.len() < 2 {
        return;
    }
    let spread: Vec<Interval> = ok
        .iter()
        .map(|(_, v)| Interval::of(&v.iter().map(|x| x.1).collect::<Vec<_>>()))
        .collect();
    let estimates: Vec<f64> = spread.iter().map(|i| i.mean).collect();
    // `a` is the cheaper of the pair: b's cost over a's, round by round.
    let ratio = |a: usize, b: usize| paired(&ok[b].1, &ok[a].1).map(Ratio::from);
    let decided = |a: usize, b: usize| ratio(a, b).is_some_and(|r| r.decided());
    let groups = rank::groups(&estimates, Order::LowFirst, decided);
    out.decided |= groups.len() > 1;
    let name = |i: usize| w.target(&ok[i].0.g.key);
    let named = rank::sentence(&groups, |i| {
        format!(
            "{} {} ± {}",
            name(i),
            fixed(spread[i].mean, m.decimals),
            fixed(spread[i].half, m.decimals)
        )
    });
    let ranked = Ranked {
        groups: &groups,
        ratio: &ratio,
        name: &name,
        rounds: ok[0].1.len(),
    };
    let text = format!(
        "{}{}: {named}{}. \"≈\" joins neighbours whose paired per-round ratio holds 1; \"then\" marks a difference its 95 % interval decides.",
        at(&w.setting(&ok[0].0.g.key, true)),
        m.what,
        ranked.chains()
    );
    out.findings.push(Finding { kind: m.kind, text });
    let setting = w.setting(&ok[0].0.g.key, true);
    let setting = if setting.is_empty() {
        String::new()
    } else {
        format!(" ({setting})")
    };
    for (members, why) in ranked.unsplit() {
        out.undecided
            .push(format!("{} of {members}{setting}: {why}", m.short));
    }
}
