//! Wall-clock time for runs that must line up across processes and
//! machines: parsing `--start-at`, and turning the monotonic instants the
//! engine measures with into Unix milliseconds for the JSON.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Unix milliseconds of a wall-clock time (negative before 1970).
pub fn unix_ms(t: SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64() * 1e3,
        Err(e) => -e.duration().as_secs_f64() * 1e3,
    }
}

/// Parses `--start-at`: Unix milliseconds (`1767225600000`) or RFC 3339
/// (`2026-01-01T00:00:00Z`, `2026-01-01T01:00:00.5+01:00`).
pub fn parse_start_at(s: &str) -> Result<SystemTime, String> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        let ms: u64 = s
            .parse()
            .map_err(|_| format!("--start-at {s}: too large for Unix milliseconds"))?;
        return UNIX_EPOCH
            .checked_add(Duration::from_millis(ms))
            .ok_or_else(|| format!("--start-at {s}: too far in the future"));
    }
    let t = OffsetDateTime::parse(s, &Rfc3339).map_err(|e| {
        format!("invalid --start-at '{s}' ({e}): give Unix milliseconds or RFC 3339, e.g. 2026-01-01T12:00:00Z")
    })?;
    let nanos = t.unix_timestamp_nanos();
    if nanos < 0 {
        return Err(format!("--start-at {s} is before 1970"));
    }
    Ok(UNIX_EPOCH + Duration::from_nanos(nanos as u64))
}

/// One reading of both clocks, taken together, to convert between them:
/// the engine keeps time with `Instant` (monotonic), the JSON and other
/// machines with the wall clock.
#[derive(Debug, Clone, Copy)]
pub struct Anchor {
    instant: Instant,
    wall: SystemTime,
}

impl Anchor {
    pub fn now() -> Anchor {
        Anchor {
            instant: Instant::now(),
            wall: SystemTime::now(),
        }
    }

    /// The instant at which the wall clock reads `t`; a time already past
    /// maps to an instant in the past (None only if the monotonic clock
    /// cannot go back that far, i.e. before the machine booted).
    pub fn instant_of(&self, t: SystemTime) -> Option<Instant> {
        match t.duration_since(self.wall) {
            Ok(ahead) => self.instant.checked_add(ahead),
            Err(behind) => self.instant.checked_sub(behind.duration()),
        }
    }

    /// Unix milliseconds of a monotonic instant.
    pub fn unix_ms_of(&self, i: Instant) -> f64 {
        let wall = match i.checked_duration_since(self.instant) {
            Some(after) => self.wall + after,
            None => self.wall - self.instant.duration_since(i),
        };
        unix_ms(wall)
    }
}

/// When a run measured, on the wall clock, so runs made on several
/// machines can be lined up (the clocks must agree: NTP or chrony).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Window {
    /// `--start-at`, when given.
    pub planned_start_unix_ms: Option<f64>,
    /// When this process began measuring: after the planned start if it
    /// was late (open loop, its time and schedule still count from the
    /// planned start).
    pub start_unix_ms: f64,
    /// When it stopped.
    pub end_unix_ms: f64,
    /// Merged runs: how far apart their starts were (latest minus earliest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_skew_ms: Option<f64>,
}

/// Runs that did not all overlap in time: the one that ended first ended
/// `gap_ms` before the one that started last began.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Apart {
    pub ended_first: usize,
    pub started_last: usize,
    pub gap_ms: f64,
}

/// Whether some instant lies inside every run's window; if not, the two
/// runs that show it.
pub fn apart(windows: &[Window]) -> Option<Apart> {
    let by = |f: fn(&Window) -> f64, last: bool| {
        let mut it = windows.iter().enumerate();
        let first = it.next()?;
        Some(
            it.fold(first, |best, w| match (f(w.1) > f(best.1)) == last {
                true => w,
                false => best,
            })
            .0,
        )
    };
    let ended_first = by(|w| w.end_unix_ms, false)?;
    let started_last = by(|w| w.start_unix_ms, true)?;
    let gap_ms = windows[started_last].start_unix_ms - windows[ended_first].end_unix_ms;
    (gap_ms > 0.0).then_some(Apart {
        ended_first,
        started_last,
        gap_ms,
    })
}

/// Total time covered by at least one of the spans `[start, end]` (ms).
pub fn union_ms(spans: &[(f64, f64)]) -> f64 {
    let mut spans = spans.to_vec();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut current: Option<(f64, f64)> = None;
    for (s, e) in spans {
        current = match current {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + current.map_or(0.0, |(s, e)| e - s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(start: f64, end: f64) -> Window {
        Window {
            planned_start_unix_ms: None,
            start_unix_ms: start,
            end_unix_ms: end,
            start_skew_ms: None,
        }
    }

    #[test]
    fn runs_apart_name_the_gap() {
        assert_eq!(apart(&[w(0.0, 10.0), w(5.0, 20.0), w(9.0, 11.0)]), None);
        let a = apart(&[w(0.0, 10.0), w(5.0, 20.0), w(12.5, 30.0)]).unwrap();
        assert_eq!((a.ended_first, a.started_last, a.gap_ms), (0, 2, 2.5));
        assert_eq!(apart(&[]), None);
    }

    #[test]
    fn the_union_counts_overlaps_once_and_gaps_not_at_all() {
        assert_eq!(union_ms(&[(0.0, 10.0), (5.0, 20.0)]), 20.0);
        assert_eq!(union_ms(&[(30.0, 40.0), (0.0, 10.0), (5.0, 8.0)]), 20.0);
        assert_eq!(union_ms(&[]), 0.0);
    }

    #[test]
    fn start_at_takes_unix_ms_and_rfc_3339() {
        let ms = |s| unix_ms(parse_start_at(s).unwrap());
        assert_eq!(ms("1767225600000"), 1_767_225_600_000.0);
        assert_eq!(ms("2026-01-01T00:00:00Z"), 1_767_225_600_000.0);
        assert_eq!(ms("2026-01-01T01:00:00.25+01:00"), 1_767_225_600_250.0);
        for bad in ["", "soon", "2026-01-01", "-5", "99999999999999999999999"] {
            let e = parse_start_at(bad).unwrap_err();
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn anchors_convert_both_ways() {
        let a = Anchor::now();
        let later = SystemTime::now() + Duration::from_secs(5);
        let i = a.instant_of(later).unwrap();
        assert!((a.unix_ms_of(i) - unix_ms(later)).abs() < 0.001);
        let earlier = SystemTime::now() - Duration::from_millis(10);
        let i = a.instant_of(earlier).unwrap();
        assert!(i < Instant::now());
        assert!((a.unix_ms_of(i) - unix_ms(earlier)).abs() < 0.001);
    }
}
