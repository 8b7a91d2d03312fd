//! What the rankings could not decide, and why: a ranking's result
//! carries its undecided groups and bounds in words, and they become one
//! finding after the rankings (bounds the client set, differences within
//! the rounds' noise).

use super::{Finding, Kind};
use crate::report::num::fixed;
use crate::stats::rank;
use crate::stats::ratio::Ratio;

/// What a ranking found: its sentences, whether any decided a
/// difference, and what it could not decide and why, in words.
#[derive(Default)]
pub struct Rankings {
    pub findings: Vec<Finding>,
    pub decided: bool,
    pub undecided: Vec<String>,
}

/// A ranking's groups and how its neighbours compare: what the
/// sentences about chains and undecided groups are drawn from.
pub struct Ranked<'a> {
    pub groups: &'a [Vec<usize>],
    /// The ratio of neighbour `b` to the better `a`, over rounds.
    pub ratio: &'a dyn Fn(usize, usize) -> Option<Ratio>,
    pub name: &'a dyn Fn(usize) -> String,
    pub rounds: usize,
}

impl Ranked<'_> {
    fn decided(&self, a: usize, b: usize) -> bool {
        (self.ratio)(a, b).is_some_and(|r| r.decided())
    }

    /// " (a and c, the ends of one "≈" chain, differ: ...)" for each
    /// chain whose ends its ratios decide apart; empty when none.
    pub fn chains(&self) -> String {
        rank::ends_apart(self.groups, |a, b| self.decided(a, b))
            .into_iter()
            .map(|(a, b)| {
                format!(
                    " ({} and {}, the ends of one \"≈\" chain, differ: each is only ≈ its neighbour)",
                    (self.name)(a),
                    (self.name)(b)
                )
            })
            .collect()
    }

    /// Each group of two or more, "a ≈ b" and why it stayed one: the
    /// widest interval of a neighbouring pair.
    pub fn unsplit(&self) -> Vec<(String, String)> {
        self.groups
            .iter()
            .filter(|g| g.len() > 1)
            .map(|g| {
                let widest = g
                    .windows(2)
                    .filter_map(|p| (self.ratio)(p[0], p[1]).and_then(|r| r.half()))
                    .fold(0.0, f64::max);
                let names: Vec<String> = g.iter().map(|&i| (self.name)(i)).collect();
                (names.join(" ≈ "), noise(widest, self.rounds))
            })
            .collect()
    }
}

/// Why a group of a ranking stayed one: the widest paired interval of
/// its neighbours (a ratio's half-width), as the difference these rounds
/// could not see; an interval past ±100 % bounds nothing.
fn noise(widest_half: f64, rounds: usize) -> String {
    if widest_half >= 1.0 {
        format!("its {rounds} rounds disagree too widely to bound a difference (noise; run more rounds)")
    } else {
        format!(
            "within ±{} % (the widest paired interval of {rounds} rounds), noise",
            fixed(widest_half * 100.0, 0)
        )
    }
}

/// The one finding that gathers what the rankings left undecided.
pub fn finding(rankings: &[&Rankings]) -> Option<Finding> {
    let all: Vec<&str> = rankings
        .iter()
        .flat_map(|r| r.undecided.iter().map(String::as_str))
        .collect();
    (!all.is_empty()).then(|| Finding {
        kind: Kind::Undecided,
        text: format!("Not decided, and why: {}.", all.join("; ")),
    })
}
