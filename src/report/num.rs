//! Number formatting for tables and chart ticks. Fixed decimals only, so
//! the same numbers always print the same text (reports are compared
//! byte for byte).

/// `v` with `decimals` digits after the point; `n/a` when not finite.
/// Negative zero prints as zero, so rounding noise does not show as `-0.0`.
pub fn fixed(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let s = format!("{v:.decimals$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

/// `mean ± sd`, or the mean alone when there was a single run (its sd is
/// not a measurement of spread, just zero).
pub fn mean_sd(mean: f64, sd: f64, runs: usize, decimals: usize) -> String {
    if runs < 2 {
        fixed(mean, decimals)
    } else {
        format!("{} ± {}", fixed(mean, decimals), fixed(sd, decimals))
    }
}

/// `mean ± half-width` of a 95 % interval given by its ends, or
/// `mean (1 run)` when there was no spread to measure.
pub fn mean_ci(mean: f64, ci: Option<(f64, f64)>, decimals: usize) -> String {
    match ci {
        Some((_, high)) => format!(
            "{} ± {}",
            fixed(mean, decimals),
            fixed(high - mean, decimals)
        ),
        None => format!("{} (1 run)", fixed(mean, decimals)),
    }
}

/// Kibibytes as mebibytes with one decimal (RSS is read from /proc in kB).
pub fn mib(kb: f64) -> String {
    fixed(kb / 1024.0, 1)
}

/// A chart tick: as few decimals as the value needs, at most three, so
/// axes read `1 10 100` and `0.25 0.5`, never `1.0e2`.
pub fn tick(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let a = v.abs();
    let decimals = if a >= 100.0 || a == 0.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let s = fixed(v, decimals);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_text() {
        assert_eq!(fixed(1.26, 1), "1.3");
        assert_eq!(fixed(-0.0001, 2), "0.00");
        assert_eq!(fixed(-1.5, 1), "-1.5");
        assert_eq!(fixed(f64::NAN, 2), "n/a");
        assert_eq!(mean_sd(10.0, 1.0, 1, 1), "10.0");
        assert_eq!(mean_sd(10.0, 1.0, 3, 1), "10.0 ± 1.0");
        assert_eq!(mean_ci(100.0, Some((90.0, 110.0)), 0), "100 ± 10");
        assert_eq!(mean_ci(100.0, None, 1), "100.0 (1 run)");
        assert_eq!(tick(100.0), "100");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(0.125), "0.125");
        assert_eq!(tick(12.0), "12");
        assert_eq!(tick(0.0), "0");
    }
}
