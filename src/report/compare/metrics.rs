//! Each metric of a pair of cells: A's and B's value, the ratio B/A with
//! its 95 % interval (Welch on the logs of the per-run values: runs of
//! two sweeps are never paired by round), the double ratio against a
//! baseline both sweeps ran, and the verdict. The statistics themselves
//! are `stats`; this file only decides which apply.

use super::matching::Pair;
use super::model::{Cell, Metric, Run};
use crate::stats::{log_welch, Decision, Ratio};

/// What a metric's change comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Better,
    Worse,
    /// Within the noise: the interval holds 1.
    Same,
    /// A side has one run: its spread is unknown, so nothing is decided.
    OneRun,
    /// The load generator set the rate on a side.
    ClientBound,
    /// A side did not measure it.
    NoData,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Same => "~",
            Verdict::OneRun => "~ (one run)",
            Verdict::ClientBound => "~ (client-bound)",
            Verdict::NoData => "n/a",
        }
    }
}

/// One side's figure: the mean over its runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    pub n: usize,
    pub mean: f64,
}

impl Figure {
    fn of(v: &[f64]) -> Option<Figure> {
        (!v.is_empty()).then(|| Figure {
            n: v.len(),
            mean: v.iter().sum::<f64>() / v.len() as f64,
        })
    }
}

#[derive(Debug, Clone)]
pub struct MetricResult {
    pub metric: Metric,
    pub a: Option<Figure>,
    pub b: Option<Figure>,
    /// B / A.
    pub ratio: Option<Ratio>,
    /// (B / baseline B) / (A / baseline A), each side's ratio taken per
    /// round within its own sweep.
    pub double: Option<Ratio>,
    pub verdict: Verdict,
}

/// Failed requests: counts, not rates. Any failure where there was none
/// is worse.
#[derive(Debug, Clone, Copy)]
pub struct Failed {
    pub a: u64,
    pub b: u64,
    pub verdict: Verdict,
}

/// A pair of cells with every metric compared.
#[derive(Debug, Clone)]
pub struct CellResult<'a> {
    pub pair: Pair<'a>,
    pub metrics: Vec<MetricResult>,
    pub failed: Failed,
}

/// Compares every metric either cell measured.
pub fn compare_pair(pair: Pair<'_>) -> CellResult<'_> {
    let metrics = Metric::ALL
        .into_iter()
        .filter(|&m| !pair.a.values(m).is_empty() || !pair.b.values(m).is_empty())
        .map(|m| metric(&pair, m))
        .collect();
    let (a, b) = (pair.a.failed, pair.b.failed);
    let verdict = match (a, b) {
        (0, n) if n > 0 => Verdict::Worse,
        (n, 0) if n > 0 => Verdict::Better,
        _ => Verdict::Same,
    };
    CellResult {
        pair,
        metrics,
        failed: Failed { a, b, verdict },
    }
}

fn metric(pair: &Pair<'_>, m: Metric) -> MetricResult {
    let (va, vb) = (side_values(pair.a, m), side_values(pair.b, m));
    let ratio = log_welch(&vb, &va);
    // Peak RSS has no per-run spread to take a double ratio over.
    let double = (m != Metric::Rss)
        .then(|| double_ratio(pair.a, pair.b, m))
        .flatten();
    let bound = m == Metric::Rps && (pair.a.client_bound || pair.b.client_bound);
    let verdict = match ratio {
        None => Verdict::NoData,
        Some(_) if bound => Verdict::ClientBound,
        Some(r) if r.ci95.is_none() => Verdict::OneRun,
        Some(r) => match (r.decision(), m.higher_is_better()) {
            (Decision::Undecided, _) => Verdict::Same,
            (Decision::Higher, true) | (Decision::Lower, false) => Verdict::Better,
            _ => Verdict::Worse,
        },
    };
    MetricResult {
        metric: m,
        a: Figure::of(&va),
        b: Figure::of(&vb),
        ratio,
        double,
        verdict,
    }
}

/// A side's values of `m`. Peak RSS is one value a side, the highest:
/// one server process serves every run of a sweep, so its runs' peaks
/// are not independent repeats.
fn side_values(c: &Cell, m: Metric) -> Vec<f64> {
    let v = c.values(m);
    match m {
        Metric::Rss if !v.is_empty() => vec![v.iter().copied().fold(0.0, f64::max)],
        _ => v,
    }
}

/// The double ratio, when both sweeps ran the same baseline target.
fn double_ratio(a: &Cell, b: &Cell, m: Metric) -> Option<Ratio> {
    let (ta, ra) = a.baseline.as_ref()?;
    let (tb, rb) = b.baseline.as_ref()?;
    if ta != tb {
        return None;
    }
    log_welch(&per_round(b, rb, m), &per_round(a, ra, m))
}

/// A cell's value over its baseline's in the same round of its sweep.
fn per_round(c: &Cell, base: &[Run], m: Metric) -> Vec<f64> {
    c.runs
        .iter()
        .filter_map(|r| {
            let v = r.values.get(&m)?;
            let b = base.iter().find(|x| x.round == r.round)?.values.get(&m)?;
            (*b > 0.0).then(|| v / b)
        })
        .collect()
}
