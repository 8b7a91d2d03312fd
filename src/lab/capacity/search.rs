//! The capacity search as a pure state machine: a ladder of offered
//! rates doubling from a floor until one fails, then bisection of the
//! last bracket to a tolerance. A rate fails only when it fails twice (one
//! host stall is not the server's limit), and a failure while the load
//! generator was busy ends the search as a bound: past that point the
//! client, not the server, is measured. No IO: the caller runs each rate
//! `next` asks for and says how it went.

use crate::results::capacity::Outcome;

/// The load generator this busy (% of the run, its busiest thread) at the
/// first failing rate makes the result a bound (issue 42's figure).
pub const CLIENT_LIMIT_PCT: f64 = 80.0;

/// How one run at a rate went.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub passed: bool,
    pub client_busy_pct: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    floor: f64,
    ceiling: f64,
    /// The bracket is done when first_fail / last_pass is at most 1 + this.
    tolerance: f64,
    last_pass: Option<f64>,
    first_fail: Option<f64>,
    /// A rate that failed once and is tried again.
    retry: Option<f64>,
    client_busy_at_fail: Option<f64>,
    done: Option<Outcome>,
}

/// Where a search ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found {
    pub outcome: Outcome,
    /// The capacity's single estimate or the bound.
    pub rate: f64,
    pub last_pass: Option<f64>,
    pub first_fail: Option<f64>,
    pub client_busy_pct: Option<f64>,
}

impl Search {
    pub fn new(floor: f64, ceiling: f64, tolerance: f64) -> Search {
        Search {
            floor,
            ceiling,
            tolerance,
            last_pass: None,
            first_fail: None,
            retry: None,
            client_busy_at_fail: None,
            done: None,
        }
    }

    /// The next rate to run, or None when the search is over.
    pub fn next(&self) -> Option<f64> {
        if self.done.is_some() {
            return None;
        }
        if let Some(r) = self.retry {
            return Some(r);
        }
        match (self.last_pass, self.first_fail) {
            (None, None) => Some(self.floor),
            (Some(p), None) => Some((p * 2.0).min(self.ceiling)),
            (Some(p), Some(f)) => Some((p * f).sqrt().round()),
            (None, Some(_)) => None,
        }
    }

    /// How the run at `rate` (the one `next` gave) went.
    pub fn record(&mut self, rate: f64, v: Verdict) {
        if v.passed {
            self.retry = None;
            self.last_pass = Some(self.last_pass.map_or(rate, |p| p.max(rate)));
            if self.first_fail.is_none() && rate >= self.ceiling {
                self.done = Some(Outcome::Above);
            }
        } else if self.retry != Some(rate) {
            self.retry = Some(rate);
            self.client_busy_at_fail = Some(v.client_busy_pct);
            return;
        } else {
            self.retry = None;
            self.first_fail = Some(self.first_fail.map_or(rate, |f| f.min(rate)));
            let busy = self
                .client_busy_at_fail
                .unwrap_or(0.0)
                .max(v.client_busy_pct);
            self.client_busy_at_fail = Some(busy);
            if self.last_pass.is_none() {
                self.done = Some(Outcome::Below);
            } else if busy >= CLIENT_LIMIT_PCT {
                self.done = Some(Outcome::ClientLimit);
            }
        }
        if let (None, Some(p), Some(f)) = (self.done, self.last_pass, self.first_fail) {
            if f <= p * (1.0 + self.tolerance) {
                self.done = Some(Outcome::Capacity);
            }
        }
    }

    /// The result, once `next` says None.
    pub fn found(&self) -> Option<Found> {
        let outcome = self.done?;
        let rate = match outcome {
            Outcome::Below => self.floor,
            Outcome::Above => self.ceiling,
            _ => self.last_pass?,
        };
        Some(Found {
            outcome,
            rate,
            last_pass: self.last_pass,
            first_fail: self.first_fail,
            client_busy_pct: self
                .client_busy_at_fail
                .filter(|_| self.first_fail.is_some()),
        })
    }
}

/// One round's estimate: bisection of `bracket` in `steps` runs, one run a
/// rate (the rounds' spread is their repeat); `run` says whether a rate
/// passed. Returns the highest rate that passed, or the bracket's low end
/// when none did.
pub fn round(
    bracket: (f64, f64),
    steps: usize,
    mut run: impl FnMut(f64) -> Option<bool>,
) -> Option<f64> {
    let (mut lo, mut hi) = bracket;
    for _ in 0..steps {
        let mid = (lo * hi).sqrt().round();
        if run(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against a server that serves `cap`/s and a client
    /// that manages `client`/s, failing the listed rates once by chance.
    fn against(cap: f64, client: f64, stalls: &[f64]) -> (Found, Vec<f64>) {
        let mut s = Search::new(1000.0, 1e6, 0.05);
        let mut tried = Vec::new();
        let mut stalled: Vec<f64> = Vec::new();
        while let Some(r) = s.next() {
            tried.push(r);
            assert!(tried.len() < 60, "a search ends: {tried:?}");
            let stall = stalls.contains(&r) && !stalled.contains(&r);
            if stall {
                stalled.push(r);
            }
            let busy = (r / client * 100.0).min(100.0);
            let passed = r <= cap.min(client) && !stall;
            s.record(
                r,
                Verdict {
                    passed,
                    client_busy_pct: busy,
                },
            );
        }
        (s.found().unwrap(), tried)
    }

    #[test]
    fn a_known_capacity_is_bracketed_to_five_percent() {
        let (f, tried) = against(2000.0, 1e9, &[]);
        assert_eq!(f.outcome, Outcome::Capacity);
        let (p, x) = (f.last_pass.unwrap(), f.first_fail.unwrap());
        assert!(
            p <= 2000.0 && x > 2000.0 && x <= p * 1.05,
            "{p} {x} {tried:?}"
        );
        assert_eq!(&tried[..3], [1000.0, 2000.0, 4000.0], "a ladder doubling");
    }

    #[test]
    fn one_stall_does_not_fail_a_rung_and_every_failure_is_tried_twice() {
        let (f, tried) = against(2000.0, 1e9, &[2000.0]);
        assert!(f.last_pass.unwrap() >= 1900.0, "{f:?}");
        assert_eq!(tried.iter().filter(|&&r| r == 2000.0).count(), 2);
        let failures = tried.iter().filter(|&&r| r > 2000.0).count();
        assert_eq!(failures % 2, 0, "each failing rate twice: {tried:?}");
    }

    #[test]
    fn a_busy_client_at_the_first_failure_makes_a_bound() {
        let (f, tried) = against(1e9, 70_000.0, &[]);
        assert_eq!(f.outcome, Outcome::ClientLimit);
        assert_eq!(f.rate, 64_000.0);
        assert_eq!(
            tried.last(),
            Some(&128_000.0),
            "no bisection past the client"
        );
        assert!(f.client_busy_pct.unwrap() >= CLIENT_LIMIT_PCT);
    }

    #[test]
    fn below_the_floor_and_above_the_ceiling_are_bounds() {
        assert_eq!(against(500.0, 1e9, &[]).0.outcome, Outcome::Below);
        let (f, _) = against(1e9, 1e9, &[]);
        assert_eq!((f.outcome, f.rate), (Outcome::Above, 1e6));
    }

    #[test]
    fn a_round_bisects_its_bracket() {
        let est = round((1800.0, 2200.0), 4, |r| Some(r <= 2000.0)).unwrap();
        assert!((1950.0..=2000.0).contains(&est), "{est}");
        assert_eq!(round((1800.0, 2200.0), 3, |_| Some(false)), Some(1800.0));
        assert_eq!(round((1800.0, 2200.0), 3, |_| None), None, "interrupted");
    }
}
