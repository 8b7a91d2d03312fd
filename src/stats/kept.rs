//! Whether an open-loop run kept its offered rate: the one threshold
//! behind bench's `rate-short` verdict, a sweep cell's `rate-short`
//! status and the capacity search's rule that a rung was served.

/// An achieved rate below this share of the offered one is rate-short:
/// the latencies then describe a lighter load than asked.
pub const RATE_KEPT: f64 = 0.95;

/// `achieved` requests/s kept an offered `rate`.
pub fn rate_kept(rate: f64, achieved: f64) -> bool {
    achieved >= rate * RATE_KEPT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ninety_five_percent_is_kept_and_less_is_not() {
        assert!(rate_kept(1000.0, 950.0));
        assert!(rate_kept(1000.0, 1200.0));
        assert!(!rate_kept(1000.0, 949.0));
    }
}
