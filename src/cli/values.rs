//! Parsers for flag values shared by the subcommands (durations, sizes).

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
}
