//! A mean over repeats with its 95 % confidence interval (Student's t),
//! and the coefficient of variation that says the repeats disagree.

/// A cell's repeats disagree when their coefficient of variation is above
/// this: the cell is flagged `noisy`.
pub const NOISY_CV: f64 = 0.10;

/// Two-sided 95 % critical values of Student's t for 1..=30 degrees of
/// freedom.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// Student's t for a two-sided 95 % interval with `df` degrees of freedom
/// (table to 30, then the values for 40, 60 and 120, then the normal).
pub fn t95(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T95[df - 1],
        31..=40 => 2.021,
        41..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// A mean over repeats and how far to trust it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Interval {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1).
    pub sd: f64,
    /// Half-width of the 95 % confidence interval; infinite with one
    /// value (one run says nothing about its spread), 0 with none.
    pub half: f64,
}

impl Interval {
    /// Mean, sd and Student's t interval of `v`.
    pub fn of(v: &[f64]) -> Interval {
        let n = v.len();
        if n == 0 {
            return Interval::default();
        }
        let mean = v.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return Interval {
                n,
                mean,
                sd: 0.0,
                half: f64::INFINITY,
            };
        }
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
        let sd = var.sqrt();
        Interval {
            n,
            mean,
            sd,
            half: t95(n - 1) * sd / (n as f64).sqrt(),
        }
    }

    pub fn low(&self) -> f64 {
        self.mean - self.half
    }

    pub fn high(&self) -> f64 {
        self.mean + self.half
    }

    /// Coefficient of variation: sd / mean (0 when the mean is 0).
    pub fn cv(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            self.sd / self.mean.abs()
        }
    }

    /// More than one repeat, and they disagree by more than `NOISY_CV`.
    pub fn noisy(&self) -> bool {
        self.n > 1 && self.cv() > NOISY_CV
    }

    /// The interval holds `x`.
    pub fn contains(&self, x: f64) -> bool {
        self.low() <= x && x <= self.high()
    }

    /// The interval's ends, or `None` with fewer than two values: one run
    /// says nothing about its spread, and ±inf is not a number to write.
    pub fn ci95(&self) -> Option<(f64, f64)> {
        (self.n > 1).then(|| (self.low(), self.high()))
    }

    /// The coefficient of variation when there is a spread to measure
    /// (two values or more).
    pub fn known_cv(&self) -> Option<f64> {
        (self.n > 1).then(|| self.cv())
    }

    /// The interval holds 1: as a ratio, no clear difference.
    pub fn holds_one(&self) -> bool {
        self.contains(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_interval() {
        let i = Interval::of(&[10.0, 12.0, 14.0]);
        assert_eq!(i.mean, 12.0);
        assert_eq!(i.sd, 2.0);
        // t(2) = 4.303; 4.303 * 2 / sqrt(3)
        assert!((i.half - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-9);
        assert!((i.cv() - 2.0 / 12.0).abs() < 1e-12);
        assert!(i.noisy());
        assert!(!Interval::of(&[100.0, 101.0, 99.0]).noisy());
        assert!(Interval::of(&[5.0]).half.is_infinite());
        assert!(!Interval::of(&[5.0]).noisy());
        assert_eq!(Interval::of(&[]).n, 0);
        assert_eq!(t95(1000), 1.96);
        assert_eq!(Interval::of(&[5.0]).ci95(), None);
        assert_eq!(Interval::of(&[5.0]).known_cv(), None);
        let (lo, hi) = i.ci95().expect("three values");
        assert!((lo - (12.0 - i.half)).abs() < 1e-12 && (hi - (12.0 + i.half)).abs() < 1e-12);
        assert!(Interval::of(&[0.9, 1.1]).holds_one());
        assert!(!Interval::of(&[1.2, 1.3, 1.25]).holds_one());
    }
}
