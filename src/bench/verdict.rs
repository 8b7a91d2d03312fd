//! The verdict on one run (or a merge of runs): whether its figures can be
//! taken as they stand and, when not, why. Computed here once; every
//! output of bench and merge shows it (the text report's "Verdict:" line,
//! the JSON `verdict`, a CSV column, and a WARNING on stderr beside the
//! files whose ab/hey layout has no room for it).

use serde::Serialize;

use super::result::BenchResult;

/// A run shorter than this (s) is too short to trust its rate: start-up
/// (connections, the first requests) and the last requests weigh on it,
/// and its per-second series has not one whole second.
pub const MIN_TRUSTED_S: f64 = 1.0;

/// A load thread busy this much of the time it worked (%, on a CPU or
/// waiting for one) was what held the rate: the run is client-bound. The
/// lab flags its rows by this figure too (`lab::record`).
pub const CLIENT_BOUND_PCT: f64 = 90.0;

/// One reason a run's figures are not what they seem. The first two are
/// the words and rule of a sweep's row status (`report::summary::Status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Flag {
    /// Failed requests, or no answer at all: part of the work is missing.
    #[serde(rename = "failed")]
    Failed,
    /// Answers that broke a rule of HTTP while still arriving whole (see
    /// `bench::violations`): counted as answered, the server has a bug.
    #[serde(rename = "violations")]
    Violations,
    /// Answers outside 200-299 (ab's "Non-2xx responses"): ab's rate
    /// counts them as if they were the page asked for.
    #[serde(rename = "non-2xx")]
    Non2xx,
    /// Open loop: the achieved rate fell short of `--rate`.
    #[serde(rename = "rate-short")]
    RateShort,
    /// Shorter than [`MIN_TRUSTED_S`].
    #[serde(rename = "too-short")]
    TooShort,
    /// A load thread was busy [`CLIENT_BOUND_PCT`] of the time: the rate
    /// may be the client's limit, not the server's. Judged on runs of at
    /// least [`MIN_TRUSTED_S`] only.
    #[serde(rename = "client-bound")]
    ClientBound,
}

impl Flag {
    pub fn word(self) -> &'static str {
        match self {
            Flag::Failed => "failed",
            Flag::Violations => "violations",
            Flag::Non2xx => "non-2xx",
            Flag::RateShort => "rate-short",
            Flag::TooShort => "too-short",
            Flag::ClientBound => "client-bound",
        }
    }
}

/// Every flag that applies, each with its reason in words (empty: ok).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Verdict {
    pub flags: Vec<Flag>,
    pub reasons: Vec<String>,
}

impl Verdict {
    pub fn of(r: &BenchResult) -> Verdict {
        let s = &r.stats;
        let mut v = Verdict::default();
        let nothing = s.nothing_usable();
        if s.failed() > 0 {
            v.add(
                Flag::Failed,
                format!("{} of {} requests failed", s.failed(), s.complete),
            );
        } else if let (Some(why), 0) = (&nothing, s.non_2xx) {
            v.add(Flag::Failed, why.clone());
        }
        if !s.violations.is_empty() {
            let closes = match s.violation_closes {
                0 => String::new(),
                n => format!("; {n} keep-alive connections closed for it"),
            };
            v.add(
                Flag::Violations,
                format!(
                    "answers broke HTTP's rules: {}{closes}",
                    super::violations::summary(&s.violations)
                ),
            );
        }
        if s.non_2xx > 0 {
            v.add(
                Flag::Non2xx,
                format!(
                    "{} of {} answers were not 2xx, and ab's requests per second counts them",
                    s.non_2xx, s.complete
                ),
            );
        }
        if let Some(w) = r.rate_shortfall() {
            v.add(Flag::RateShort, w);
        }
        if r.elapsed.as_secs_f64() < MIN_TRUSTED_S {
            v.add(
                Flag::TooShort,
                format!(
                    "the run lasted {:.3} s, under {MIN_TRUSTED_S} s: start-up and the last requests weigh on its rate (give more -n or a -t of at least {MIN_TRUSTED_S})",
                    r.elapsed.as_secs_f64()
                ),
            );
        }
        // Only a run long enough to judge: over a few milliseconds the
        // busy share is mostly the threads' set-up (a 50-request run read
        // 92 %), and too-short already says to run longer.
        if let Some(c) = r
            .client
            .filter(|_| r.elapsed.as_secs_f64() >= MIN_TRUSTED_S)
        {
            let busy = c.busiest_pct(r.elapsed.as_secs_f64());
            if busy >= CLIENT_BOUND_PCT {
                v.add(
                    Flag::ClientBound,
                    format!(
                        "the busiest load thread was busy {busy:.0} % of the run (on a CPU or waiting for one): the rate may be the client's limit, not the server's (add --threads, or give the client CPUs the server does not use)"
                    ),
                );
            }
        }
        v
    }

    fn add(&mut self, flag: Flag, reason: String) {
        self.flags.push(flag);
        self.reasons.push(reason);
    }

    pub fn is_ok(&self) -> bool {
        self.flags.is_empty()
    }

    /// "ok", or the flags joined by ';' (one CSV cell).
    pub fn words(&self) -> String {
        match self.is_ok() {
            true => "ok".to_string(),
            false => self
                .flags
                .iter()
                .map(|f| f.word())
                .collect::<Vec<_>>()
                .join(";"),
        }
    }

    /// One line: "ok", or the flags and their reasons.
    pub fn line(&self) -> String {
        match self.is_ok() {
            true => "ok".to_string(),
            false => format!(
                "{}: {}",
                self.words().replace(';', ", "),
                self.reasons.join("; ")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::bench::config::{BenchConfig, RequestSpec};
    use crate::bench::stats::Stats;
    use crate::net::url::HttpUrl;

    fn run(secs: f64, f: impl FnOnce(&mut Stats)) -> BenchResult {
        let cfg = BenchConfig::new(
            HttpUrl::parse("http://127.0.0.1:9/").unwrap(),
            RequestSpec::default(),
        );
        let mut stats = Stats::new(false);
        stats.complete = 100;
        stats.status_classes[2] = 100;
        f(&mut stats);
        BenchResult::new(&cfg, stats, Duration::from_secs_f64(secs))
    }

    impl BenchResult {
        fn with_client(mut self, busiest_thread_busy_s: f64, span_s: f64) -> Self {
            self.client = Some(crate::bench::ClientTime {
                cpu_s: busiest_thread_busy_s,
                busiest_thread_busy_s,
                span_s,
            });
            self
        }
    }

    #[test]
    fn a_long_clean_run_is_ok() {
        let v = Verdict::of(&run(2.0, |_| {}));
        assert!(v.is_ok());
        assert_eq!((v.words(), v.line()), ("ok".into(), "ok".into()));
    }

    #[test]
    fn each_condition_is_flagged_with_its_reason() {
        let v = Verdict::of(&run(0.2, |s| {
            s.failures.receive = 3;
            s.non_2xx = 5;
        }));
        assert_eq!(v.flags, [Flag::Failed, Flag::Non2xx, Flag::TooShort]);
        assert_eq!(v.words(), "failed;non-2xx;too-short");
        let line = v.line();
        assert!(
            line.starts_with("failed, non-2xx, too-short: 3 of 100 requests failed; 5 of 100"),
            "{line}"
        );
        assert!(line.contains("lasted 0.200 s, under 1 s"), "{line}");
    }

    #[test]
    fn a_busy_load_thread_is_client_bound() {
        let busy =
            |busy_s: f64, span_s: f64| Verdict::of(&run(2.0, |_| {}).with_client(busy_s, span_s));
        // 1.9 s busy of a 2 s run: flagged, with the figure.
        let v = busy(1.9, 2.0);
        assert_eq!(v.flags, [Flag::ClientBound]);
        assert!(
            v.reasons[0].starts_with("the busiest load thread was busy 95 %"),
            "{}",
            v.reasons[0]
        );
        // Busy through a warm-up too: judged over warm-up and run (2.5 s).
        assert!(busy(2.0, 2.5).is_ok());
        // No span recorded (an older file): judged over the run.
        assert_eq!(busy(1.8, 0.0).flags, [Flag::ClientBound]);
        assert!(busy(1.7, 0.0).is_ok());
        // A run too short to judge is only that.
        let short = run(0.005, |_| {}).with_client(0.0046, 0.005);
        assert_eq!(Verdict::of(&short).flags, [Flag::TooShort]);
    }

    #[test]
    fn no_answer_at_all_is_failed_as_in_a_sweep() {
        let v = Verdict::of(&run(2.0, |s| {
            s.complete = 0;
            s.status_classes[2] = 0;
        }));
        assert_eq!(v.flags, [Flag::Failed]);
        assert_eq!(v.reasons, ["no request completed"]);
        // All 404: non-2xx says it; nothing failed.
        let v = Verdict::of(&run(2.0, |s| {
            s.status_classes = [0, 0, 0, 0, 100, 0];
            s.non_2xx = 100;
        }));
        assert_eq!(v.flags, [Flag::Non2xx]);
    }

    #[test]
    fn violations_are_a_flag_of_their_own_with_the_kinds_and_closes() {
        use crate::bench::violations::{record, Violation};
        let v = Verdict::of(&run(2.0, |s| {
            for _ in 0..3 {
                record(&mut s.violations, Violation::BytesAfterBody, Some("junk"));
            }
            s.violation_closes = 3;
        }));
        assert_eq!(v.flags, [Flag::Violations]);
        assert_eq!(
            v.reasons,
            ["answers broke HTTP's rules: bytes-after-body (3); 3 keep-alive connections closed for it"]
        );
    }
}
