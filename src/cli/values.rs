//! Parsers for flag values shared by the subcommands (durations, sizes,
//! offered rates).

use std::time::Duration;

/// A semantically invalid argument: reported in one line, exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Parses `500ms`, `10s`, `2m` or a bare number of seconds (may be fractional).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration '{s}' (use e.g. 500ms, 10s, 2m)"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" => v,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "invalid duration unit in '{s}' (use ms, s, m or h)"
            ))
        }
    };
    if secs < 0.0 {
        return Err(format!("a duration cannot be negative: '{s}'"));
    }
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("duration out of range: '{s}'"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a byte size: `512`, `64K`, `10M`, `1G` (binary multiples; a
/// trailing `B` or `iB` is accepted).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 1 << 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 1 << 30),
        Some('t' | 'T') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("invalid size '{s}' (use e.g. 512, 64K, 10M, 1G)"))
}

/// `--rate` values as a sweep's dimension: each positive and within
/// bench's limit, none twice, in increasing order (a latency curve reads
/// left to right).
pub fn rate_list(given: &[f64]) -> Result<Vec<Option<f64>>, String> {
    let max = crate::bench::config::MAX_RATE;
    let mut v: Vec<f64> = Vec::new();
    for &r in given {
        if !(r.is_finite() && r > 0.0) {
            return Err(format!("--rate {r}: give requests per second above 0"));
        }
        if r > max {
            return Err(format!("--rate {r}: at most {max} requests per second"));
        }
        if v.contains(&r) {
            return Err(format!("--rate names {r} twice"));
        }
        v.push(r);
    }
    v.sort_by(f64::total_cmp);
    Ok(v.into_iter().map(Some).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("-1").unwrap_err().contains("negative"));
        assert!(parse_duration("2000000000")
            .unwrap_err()
            .contains("out of range"));
        assert!(parse_duration("abc").is_err());
        assert_eq!(parse_size("10M").unwrap(), 10 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("500B").unwrap(), 500);
        assert!(parse_size("x").is_err());
    }

    #[test]
    fn rates_are_sorted_and_bad_ones_get_one_line() {
        assert_eq!(
            rate_list(&[5000.0, 1000.0]).unwrap(),
            [Some(1000.0), Some(5000.0)]
        );
        for (bad, says) in [
            (vec![0.0], "above 0"),
            (vec![-5.0], "above 0"),
            (vec![f64::NAN], "above 0"),
            (vec![2e9], "at most"),
            (vec![10.0, 10.0], "twice"),
        ] {
            let e = rate_list(&bad).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{bad:?}: {e}");
        }
    }
}
