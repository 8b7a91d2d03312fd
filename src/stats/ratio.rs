//! The ratio of two means with its 95 % interval, paired (per round: the
//! drift that moves every target of a round together cancels) or unpaired
//! (two independent sets of repeats), and the rule that decides a
//! difference: its ratio's interval excludes 1. Two intervals that merely
//! fail to overlap decide nothing here.

use std::collections::BTreeMap;

use super::interval::{t95, Interval};

/// A ratio estimate and its 95 % interval; the ends are None when one
/// value (or pair) leaves the spread unknown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    pub estimate: f64,
    pub ci95: Option<(f64, f64)>,
    /// Rounds (paired) or the smaller number of repeats (unpaired).
    pub n: usize,
}

/// What a ratio says about `value` against its reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The whole interval is above 1.
    Higher,
    /// The whole interval is below 1.
    Lower,
    /// The interval holds 1, or is unknown (one round).
    Undecided,
}

impl Ratio {
    /// The decision rule: decided only when the interval excludes 1.
    pub fn decision(&self) -> Decision {
        match self.ci95 {
            Some((lo, _)) if lo > 1.0 => Decision::Higher,
            Some((_, hi)) if hi < 1.0 => Decision::Lower,
            _ => Decision::Undecided,
        }
    }

    pub fn decided(&self) -> bool {
        self.decision() != Decision::Undecided
    }

    /// Half the interval's width, for `estimate ± half`.
    pub fn half(&self) -> Option<f64> {
        self.ci95.map(|(lo, hi)| (hi - lo) / 2.0)
    }
}

impl From<Interval> for Ratio {
    fn from(i: Interval) -> Ratio {
        Ratio {
            estimate: i.mean,
            ci95: i.ci95(),
            n: i.n,
        }
    }
}

/// Ratios `value / reference` of the rounds both were measured in, as an
/// interval over the rounds (the mean of the per-round ratios, Student's
/// t). `None` when no round has both (or the reference measured 0 in
/// every shared round).
pub fn paired(value: &[(u64, f64)], reference: &[(u64, f64)]) -> Option<Interval> {
    let base: BTreeMap<u64, f64> = reference.iter().copied().collect();
    let ratios: Vec<f64> = value
        .iter()
        .filter_map(|(round, v)| {
            let b = *base.get(round)?;
            (b > 0.0).then_some(v / b)
        })
        .collect();
    (!ratios.is_empty()).then(|| Interval::of(&ratios))
}

/// The ratio of the means of two independent sets of repeats, `a / b`,
/// with its interval from the delta method on the log scale (so it stays
/// positive and is symmetric in a / b against b / a) and Welch's degrees
/// of freedom. `None` when either mean is not positive or a set is empty;
/// no interval with fewer than two repeats on either side.
pub fn unpaired(a: &[f64], b: &[f64]) -> Option<Ratio> {
    let (ia, ib) = (Interval::of(a), Interval::of(b));
    if ia.n == 0 || ib.n == 0 || ia.mean <= 0.0 || ib.mean <= 0.0 {
        return None;
    }
    let estimate = ia.mean / ib.mean;
    let n = ia.n.min(ib.n);
    if ia.n < 2 || ib.n < 2 {
        return Some(Ratio {
            estimate,
            ci95: None,
            n,
        });
    }
    // Squared relative standard errors of each mean.
    let va = (ia.sd / ia.mean).powi(2) / ia.n as f64;
    let vb = (ib.sd / ib.mean).powi(2) / ib.n as f64;
    Some(Ratio {
        estimate,
        ci95: Some(welch_on_logs(estimate, (va, ia.n), (vb, ib.n))),
        n,
    })
}

/// The 95 % interval around `estimate` from two squared standard errors
/// on the log scale, each with its number of repeats (two or more), with
/// Welch's degrees of freedom.
fn welch_on_logs(estimate: f64, (va, na): (f64, usize), (vb, nb): (f64, usize)) -> (f64, f64) {
    let se = (va + vb).sqrt();
    let df = if se == 0.0 {
        na + nb - 2
    } else {
        let welch = (va + vb).powi(2) / (va * va / (na - 1) as f64 + vb * vb / (nb - 1) as f64);
        (welch.floor() as usize).max(1)
    };
    let w = t95(df) * se;
    (estimate * (-w).exp(), estimate * w.exp())
}

/// The ratio of two independent sets of repeats, `a / b`, as the ratio of
/// their geometric means, with Welch's interval on the logarithms of the
/// per-run values: runs of two different sweeps share no round, so
/// nothing pairs them, and a rate or a latency spreads on the log scale.
/// `None` when a set is empty or holds a value that is not positive; no
/// interval with fewer than two repeats on either side.
pub fn log_welch(a: &[f64], b: &[f64]) -> Option<Ratio> {
    if a.is_empty() || b.is_empty() || a.iter().chain(b).any(|v| v.is_nan() || *v <= 0.0) {
        return None;
    }
    let logs = |v: &[f64]| Interval::of(&v.iter().map(|x| x.ln()).collect::<Vec<_>>());
    let (la, lb) = (logs(a), logs(b));
    let estimate = (la.mean - lb.mean).exp();
    let n = la.n.min(lb.n);
    if n < 2 {
        return Some(Ratio {
            estimate,
            ci95: None,
            n,
        });
    }
    let (va, vb) = (la.sd.powi(2) / la.n as f64, lb.sd.powi(2) / lb.n as f64);
    Some(Ratio {
        estimate,
        ci95: Some(welch_on_logs(estimate, (va, la.n), (vb, lb.n))),
        n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_ratios_take_the_rounds_both_have() {
        let a = [(1, 200.0), (2, 100.0), (3, 300.0)];
        let b = [(1, 100.0), (2, 50.0), (4, 1.0)];
        let r = paired(&a, &b).expect("two shared rounds");
        assert_eq!((r.n, r.mean, r.sd), (2, 2.0, 0.0));
        assert!(paired(&a, &[(9, 1.0)]).is_none());
        assert_eq!(Ratio::from(r).decision(), Decision::Higher);
    }

    #[test]
    fn a_difference_is_decided_only_when_its_interval_excludes_one() {
        // Per-round drift: both targets move together, so the ratio is
        // steady although each target's own interval is wide.
        let a = [(1, 1100.0), (2, 2200.0), (3, 1650.0)];
        let b = [(1, 1000.0), (2, 2000.0), (3, 1500.0)];
        let ia = Interval::of(&[1100.0, 2200.0, 1650.0]);
        let ib = Interval::of(&[1000.0, 2000.0, 1500.0]);
        assert!(ia.low() < ib.high(), "the intervals overlap");
        let r = Ratio::from(paired(&a, &b).unwrap());
        assert!((r.estimate - 1.1).abs() < 1e-12);
        assert_eq!(r.decision(), Decision::Higher, "{r:?}");
        // Unpaired, the same numbers decide nothing.
        let u = unpaired(&[1100.0, 2200.0, 1650.0], &[1000.0, 2000.0, 1500.0]).unwrap();
        assert_eq!(u.decision(), Decision::Undecided, "{u:?}");
        let one = Ratio {
            estimate: 2.0,
            ci95: None,
            n: 1,
        };
        assert_eq!(one.decision(), Decision::Undecided);
    }

    #[test]
    fn unpaired_ratio_of_means() {
        let u = unpaired(&[10.0, 11.0, 9.0, 10.0], &[5.0, 5.5, 4.5, 5.0]).unwrap();
        assert!((u.estimate - 2.0).abs() < 1e-12);
        let (lo, hi) = u.ci95.unwrap();
        assert!(lo < 2.0 && 2.0 < hi && lo > 1.0, "{u:?}");
        // Symmetric on the log scale: b / a is the reciprocal interval.
        let v = unpaired(&[5.0, 5.5, 4.5, 5.0], &[10.0, 11.0, 9.0, 10.0]).unwrap();
        let (vlo, vhi) = v.ci95.unwrap();
        assert!((vlo - 1.0 / hi).abs() < 1e-9 && (vhi - 1.0 / lo).abs() < 1e-9);
        assert_eq!(u.decision(), Decision::Higher);
        assert_eq!(v.decision(), Decision::Lower);
        assert!(unpaired(&[1.0], &[2.0]).unwrap().ci95.is_none());
        assert!(unpaired(&[], &[2.0]).is_none());
        assert!(unpaired(&[1.0, 2.0], &[0.0, 0.0]).is_none());
        // Known coverage: exact repeats give a zero-width interval.
        let z = unpaired(&[3.0, 3.0], &[1.5, 1.5]).unwrap();
        assert_eq!(z.ci95, Some((2.0, 2.0)));
    }

    #[test]
    fn log_welch_is_the_ratio_of_geometric_means() {
        let r = log_welch(&[20.0, 22.0, 18.0], &[10.0, 11.0, 9.0]).unwrap();
        assert!((r.estimate - 2.0).abs() < 0.01, "{r:?}");
        assert_eq!(r.decision(), Decision::Higher);
        let (lo, hi) = r.ci95.unwrap();
        let back = log_welch(&[10.0, 11.0, 9.0], &[20.0, 22.0, 18.0]).unwrap();
        let (blo, bhi) = back.ci95.unwrap();
        assert!((blo - 1.0 / hi).abs() < 1e-9 && (bhi - 1.0 / lo).abs() < 1e-9);
        assert_eq!(
            log_welch(&[10.0, 12.0], &[11.0, 10.5]).unwrap().decision(),
            Decision::Undecided
        );
        assert!(log_welch(&[1.0], &[2.0, 3.0]).unwrap().ci95.is_none());
        assert!(log_welch(&[0.0, 1.0], &[2.0, 3.0]).is_none());
        assert!(log_welch(&[], &[2.0]).is_none());
    }
}
