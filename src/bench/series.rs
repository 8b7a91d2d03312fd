//! Requests over time: counts per whole second since measuring began
//! (completed, failed, answered, latency sum and maximum), kept per thread
//! and added up after join. Every field is a count or a sum or a maximum,
//! never a rate or a quantile, so runs (threads, processes, shards) merge
//! second by second exactly.

use serde::{Deserialize, Serialize};

/// Seconds the series covers, one day: a run's seconds past it still
/// count in the totals but not in the series (`beyond_limit` says how
/// many requests that was). 40 bytes per second per load thread, so at
/// most about 3.5 MB per thread.
pub const MAX_SERIES_SECONDS: u64 = 86_400;

/// What finished within one second of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Second {
    /// Requests that finished, answered or failed (as `complete`).
    pub complete: u64,
    /// Of those, the ones that failed (as `failed`).
    pub failed: u64,
    /// Requests with a latency (answered): the latency histogram's samples.
    pub answered: u64,
    /// Sum of their latencies, µs (the mean is this over `answered`).
    pub latency_sum_us: u64,
    /// The largest of their latencies, µs.
    pub latency_max_us: u64,
}

impl Second {
    fn add(&mut self, o: &Second) {
        self.complete = self.complete.saturating_add(o.complete);
        self.failed = self.failed.saturating_add(o.failed);
        self.answered = self.answered.saturating_add(o.answered);
        self.latency_sum_us = self.latency_sum_us.saturating_add(o.latency_sum_us);
        self.latency_max_us = self.latency_max_us.max(o.latency_max_us);
    }
}

/// One run's (or thread's) seconds, index 0 being the first second after
/// measuring began (after any warm-up). Requests count in the second in
/// which they finished.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Series {
    /// When measuring began, µs since the Unix epoch (set once the
    /// threads are joined; None in results from before it was recorded).
    pub start_unix_us: Option<u64>,
    pub seconds: Vec<Second>,
    /// Requests that finished after `MAX_SERIES_SECONDS`.
    pub beyond_limit: u64,
}

impl Series {
    /// Counts one finished request, `at_s` whole seconds after measuring
    /// began, with its latency when it was answered. Called once per
    /// request: an index and a few adds, and a push once a second.
    #[inline]
    pub fn record(&mut self, at_s: u64, latency_us: Option<u64>, failed: bool) {
        let i = at_s as usize;
        if i >= self.seconds.len() {
            if at_s >= MAX_SERIES_SECONDS {
                self.beyond_limit += 1;
                return;
            }
            self.seconds.resize(i + 1, Second::default());
        }
        let s = &mut self.seconds[i];
        s.complete += 1;
        s.failed += u64::from(failed);
        if let Some(us) = latency_us {
            s.answered += 1;
            s.latency_sum_us = s.latency_sum_us.saturating_add(us);
            s.latency_max_us = s.latency_max_us.max(us);
        }
    }

    /// Adds `o` with its second 0 laid on this series' second `shift`.
    pub fn add_shifted(&mut self, o: &Series, shift: usize) {
        let need = shift + o.seconds.len();
        if self.seconds.len() < need {
            self.seconds.resize(need, Second::default());
        }
        for (mine, theirs) in self.seconds[shift..].iter_mut().zip(&o.seconds) {
            mine.add(theirs);
        }
        self.beyond_limit = self.beyond_limit.saturating_add(o.beyond_limit);
    }

    /// Merges runs made at about the same time, aligned on their start
    /// times: the earliest start is second 0, and each run's seconds are
    /// laid on the whole second nearest its offset from it (shards started
    /// together with the same start time line up exactly). None when a
    /// run has no start time (its seconds could go anywhere).
    pub fn merge_aligned<'a>(runs: impl IntoIterator<Item = &'a Series> + Clone) -> Option<Series> {
        let origin = runs.clone().into_iter().map(|s| s.start_unix_us).min()??;
        let mut out = Series {
            start_unix_us: Some(origin),
            ..Series::default()
        };
        for s in runs {
            let offset_us = s.start_unix_us? - origin;
            // Offsets beyond the series' span cannot line up with anything.
            let shift = offset_us.saturating_add(500_000) / 1_000_000;
            out.add_shifted(s, usize::try_from(shift.min(MAX_SERIES_SECONDS)).ok()?);
        }
        Some(out)
    }

    /// How much of second `k` the run lasted, in seconds (1 but for the
    /// last, partial one): the divisor for a rate.
    pub fn span_s(k: usize, elapsed_s: f64) -> f64 {
        (elapsed_s - k as f64).clamp(0.0, 1.0)
    }
}

/// The series as the JSON carries it: one array per count, one entry per
/// second (columns, so a run of an hour is 3,600 numbers per column
/// rather than 3,600 objects).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesJson {
    /// When measuring began (after warm-up), µs since the Unix epoch.
    pub start_unix_us: u64,
    pub complete: Vec<u64>,
    pub failed: Vec<u64>,
    pub answered: Vec<u64>,
    pub latency_sum_us: Vec<u64>,
    pub latency_max_us: Vec<u64>,
    /// Requests that finished past the series' limit (one day).
    pub beyond_limit: u64,
}

impl SeriesJson {
    pub fn of(s: &Series) -> Option<SeriesJson> {
        let col = |f: fn(&Second) -> u64| s.seconds.iter().map(f).collect();
        Some(SeriesJson {
            start_unix_us: s.start_unix_us?,
            complete: col(|x| x.complete),
            failed: col(|x| x.failed),
            answered: col(|x| x.answered),
            latency_sum_us: col(|x| x.latency_sum_us),
            latency_max_us: col(|x| x.latency_max_us),
            beyond_limit: s.beyond_limit,
        })
    }

    pub fn into_series(self) -> anyhow::Result<Series> {
        let n = self.complete.len();
        let cols = [
            &self.failed,
            &self.answered,
            &self.latency_sum_us,
            &self.latency_max_us,
        ];
        if cols.iter().any(|c| c.len() != n) || n as u64 > MAX_SERIES_SECONDS {
            anyhow::bail!("series columns differ in length or exceed {MAX_SERIES_SECONDS} seconds");
        }
        let seconds = (0..n)
            .map(|i| Second {
                complete: self.complete[i],
                failed: self.failed[i],
                answered: self.answered[i],
                latency_sum_us: self.latency_sum_us[i],
                latency_max_us: self.latency_max_us[i],
            })
            .collect();
        Ok(Series {
            start_unix_us: Some(self.start_unix_us),
            seconds,
            beyond_limit: self.beyond_limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(start_unix_us: u64, at: &[(u64, u64)]) -> Series {
        let mut s = Series {
            start_unix_us: Some(start_unix_us),
            ..Series::default()
        };
        for &(sec, us) in at {
            s.record(sec, Some(us), false);
        }
        s
    }

    #[test]
    fn requests_count_in_the_second_they_finished() {
        let mut s = run(0, &[(0, 10), (0, 30), (2, 5)]);
        s.record(2, None, true);
        assert_eq!(s.seconds.len(), 3);
        assert_eq!(
            s.seconds[0],
            Second {
                complete: 2,
                failed: 0,
                answered: 2,
                latency_sum_us: 40,
                latency_max_us: 30
            }
        );
        assert_eq!(s.seconds[1], Second::default());
        assert_eq!((s.seconds[2].complete, s.seconds[2].failed), (2, 1));
        s.record(MAX_SERIES_SECONDS, Some(1), false);
        assert_eq!((s.seconds.len(), s.beyond_limit), (3, 1));
    }

    #[test]
    fn runs_merge_on_the_whole_second_nearest_their_offset() {
        // b started 2.4 s after a: its second 0 is a's second 2.
        let a = run(10_000_000, &[(0, 10), (3, 7)]);
        let b = run(12_400_000, &[(0, 20), (1, 9)]);
        let m = Series::merge_aligned([&b, &a]).unwrap();
        assert_eq!(m.start_unix_us, Some(10_000_000));
        let complete: Vec<u64> = m.seconds.iter().map(|s| s.complete).collect();
        assert_eq!(complete, [1, 0, 1, 2]);
        assert_eq!(m.seconds[3].latency_max_us, 9);
        assert_eq!(m.seconds[3].latency_sum_us, 16);
        // 2.6 s later rounds to 3.
        let c = run(12_600_000, &[(0, 1)]);
        let m = Series::merge_aligned([&a, &c]).unwrap();
        assert_eq!(m.seconds[3].complete, 2);
        let none = Series::default();
        assert_eq!(Series::merge_aligned([&a, &none]), None);
    }

    #[test]
    fn json_columns_round_trip_and_bad_ones_are_refused() {
        let a = run(5, &[(0, 10), (1, 7)]);
        let j = SeriesJson::of(&a).unwrap();
        assert_eq!(j.clone().into_series().unwrap(), a);
        let mut bad = j;
        bad.failed.pop();
        assert!(bad.into_series().is_err());
        assert_eq!(Series::span_s(2, 2.25), 0.25);
        assert_eq!(Series::span_s(0, 2.25), 1.0);
    }
}
