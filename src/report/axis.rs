//! Chart axes: value ranges, log or linear scales, and where the ticks
//! go (decades 1, 10, 100 on a log axis; 1, 2 or 5 times a power of ten on
//! a linear one), with compact tick labels. Pure functions of numbers.

use super::num::tick;

/// Whether values in `v` span at least `ratio` (all positive): where a
/// log axis shows small and large values alike.
pub fn spans(v: impl IntoIterator<Item = f64>, ratio: f64) -> bool {
    let (lo, hi) = bounds(v);
    lo > 0.0 && hi / lo >= ratio
}

/// A log x axis when the measured x values span ten times or more
/// (concurrency 1 to 1000): the small ones are then not squeezed into a
/// corner.
pub fn wants_log_x(xs: impl IntoIterator<Item = f64>) -> bool {
    spans(xs, 10.0)
}

/// A log y axis when every value is positive and they span more than ten
/// times (p99 of 0.1 ms at c=1, 200 ms at c=1000).
pub fn wants_log_y(ys: &[f64]) -> bool {
    ys.iter().all(|y| *y > 0.0) && spans(ys.iter().copied(), 10.0 + 1e-9)
}

fn bounds(v: impl IntoIterator<Item = f64>) -> (f64, f64) {
    v.into_iter()
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        })
}

/// An axis: value range, log or linear, and where its ticks go.
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    pub ticks: Vec<f64>,
}

impl Axis {
    /// Position of `v` in 0..=1 along the axis.
    pub fn frac(&self, v: f64) -> f64 {
        if self.log {
            let v = v.max(self.lo);
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// The x axis over the points' `xs`: log when asked and possible,
    /// whole-number ticks only when `integer`.
    pub fn x(xs: &[f64], log: bool, integer: bool) -> Axis {
        let (lo, hi) = bounds(xs.iter().copied());
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        if log && lo > 0.0 {
            let (lo, hi) = (lo / 1.5, hi * 1.5);
            // Decades, plus the measured values themselves when there are
            // few (clients 1, 4, 16): the reader sees where the cells are.
            let mut ticks = decades(lo, hi);
            let mut data: Vec<f64> = xs.to_vec();
            data.sort_by(f64::total_cmp);
            data.dedup();
            if data.len() <= 8 {
                ticks.extend(data);
                ticks.sort_by(f64::total_cmp);
                ticks.dedup();
            }
            return Axis {
                lo,
                hi,
                log: true,
                ticks,
            };
        }
        // One x value (E3's single concurrency) gets room on both sides.
        let pad = if hi > lo {
            (hi - lo) * 0.06
        } else {
            (lo.abs() * 0.5).max(1.0)
        };
        let (lo, hi) = (lo - pad, hi + pad);
        let mut step = nice_step((hi - lo) / 6.0);
        if integer {
            step = step.max(1.0);
        }
        Axis {
            lo,
            hi,
            log: false,
            ticks: linear_ticks(lo, hi, step),
        }
    }

    /// The y axis over the points' values `ys` and the ends of their
    /// intervals `extents`: from zero, or by decades when `log`.
    pub fn y(ys: &[f64], extents: &[f64], log: bool) -> Axis {
        let (_, hi) = bounds(ys.iter().chain(extents).copied());
        let hi = if hi.is_finite() { hi } else { 1.0 };
        if log {
            // Only the points decide a log axis' floor: an interval that
            // reaches below zero is cut at the floor. A little room past
            // the data, not whole decades, so the lines use the panel.
            let (plo, phi) = bounds(ys.iter().copied().filter(|y| *y > 0.0));
            let floor = if plo.is_finite() { plo } else { 1.0 };
            let lo = floor / 1.4;
            let hi = hi.max(phi).max(floor) * 1.25;
            let hi = if hi > lo * 10.0 { hi } else { lo * 10.0 };
            return Axis {
                lo,
                hi,
                log: true,
                ticks: log_ticks(lo, hi),
            };
        }
        // From zero, so heights compare.
        let top = if hi > 0.0 { hi * 1.08 } else { 1.0 };
        let step = nice_step(top / 5.0);
        let top = (top / step).ceil() * step;
        Axis {
            lo: 0.0,
            hi: top,
            log: false,
            ticks: linear_ticks(0.0, top, step),
        }
    }
}

/// Powers of ten from `lo` to `hi`: the labelled ticks of a log axis.
pub fn decades(lo: f64, hi: f64) -> Vec<f64> {
    let mut t = Vec::new();
    let mut e = lo.log10().ceil() as i32;
    while 10f64.powi(e) <= hi * (1.0 + 1e-9) {
        t.push(10f64.powi(e));
        e += 1;
    }
    t
}

/// Decades; with fewer than three in range, 2 and 5 times them too, so
/// a log axis over 6k..65k still reads 10k, 20k, 50k.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let d = decades(lo, hi);
    if d.len() >= 3 {
        return d;
    }
    let mut t: Vec<f64> = decades(lo / 10.0, hi)
        .into_iter()
        .flat_map(|p| [p, 2.0 * p, 5.0 * p])
        .filter(|v| (lo..=hi).contains(v))
        .collect();
    t.sort_by(f64::total_cmp);
    t
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * p)
}

fn linear_ticks(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let mut t = Vec::new();
    let mut v = (lo / step).ceil() * step;
    while v <= hi + step * 1e-9 && t.len() < 50 {
        // Snap away float residue (0.30000000000000004).
        t.push((v / step).round() * step);
        v += step;
    }
    t
}

/// A tick label: `1`, `10`, `100`, `2.5`, `20k`, `1.5M`.
pub fn axis_tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", tick(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", tick(v / 1e3))
    } else {
        tick(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks() {
        assert_eq!(decades(0.7, 1500.0), vec![1.0, 10.0, 100.0, 1000.0]);
        assert!(spans([1.0, 10.0], 10.0));
        assert!(!spans([0.0, 10.0], 10.0));
        assert_eq!(axis_tick(20000.0), "20k");
        assert_eq!(axis_tick(1_500_000.0), "1.5M");
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(1200.0), 2000.0);
        // Few measured values on a log axis are ticks too.
        let x = Axis::x(&[1.0, 4.0, 16.0], true, true);
        assert_eq!(x.ticks, vec![1.0, 4.0, 10.0, 16.0]);
        let y = Axis::y(&[3.0, 40.0], &[-1.0, 50.0], false);
        assert_eq!((y.lo, y.hi), (0.0, 60.0));
        let y = Axis::y(&[0.02, 3.0], &[], true);
        assert_eq!(y.ticks, vec![0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0]);
        assert!(y.lo < 0.02 && y.hi > 3.0);
        let y = Axis::y(&[6000.0, 65000.0], &[130_000.0], true);
        assert_eq!(y.ticks, vec![5000.0, 10000.0, 20000.0, 50000.0, 100000.0]);
    }
}
