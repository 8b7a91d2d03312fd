//! The arithmetic of the slow-client rules a `Session` keeps: how much
//! time bytes earn at a minimum rate, per-window rates that cannot be
//! banked, and a request's average rate since it began.

use std::time::{Duration, Instant};

/// Bytes moved since a window began. Each window of the timeout's length
/// must move rate x timeout bytes, then the next begins: a fast start banks
/// no credit, and a pause as long as a window ends the transfer.
#[derive(Debug, Clone, Copy)]
pub struct RateWindow {
    since: Instant,
    bytes: u64,
}

impl RateWindow {
    pub fn new(now: Instant) -> Self {
        RateWindow {
            since: now,
            bytes: 0,
        }
    }

    pub fn add(&mut self, now: Instant, n: u64, window: Duration, rate: u64) {
        self.bytes += n;
        if self.bytes >= owed(window, rate) {
            *self = RateWindow::new(now);
        }
    }

    pub fn deadline(&self, window: Duration) -> Instant {
        self.since + window
    }
}

/// Bytes a window of this length must move at `rate` bytes per second.
fn owed(window: Duration, rate: u64) -> u64 {
    ((window.as_secs_f64() * rate as f64).ceil() as u64).max(1)
}

/// Time `bytes` earn at `rate` bytes per second: one second per `rate`.
fn earned(bytes: u64, rate: u64) -> Duration {
    Duration::try_from_secs_f64(bytes as f64 / rate as f64).unwrap_or(Duration::MAX)
}

/// Time a request head gets: `base`, plus a second per `rate` bytes
/// received, up to `max` (as mod_reqtimeout), so a head on a slow link
/// gets longer while a slowloris trickle earns next to nothing.
pub fn header_allowance(base: Duration, max: Duration, rate: u64, bytes: u64) -> Duration {
    if rate == 0 {
        return base;
    }
    base.saturating_add(earned(bytes, rate)).min(max.max(base))
}

/// A request with a body, judged on its average rate since it began: it
/// has `grace` plus a second per `rate` bytes arrived, so a slow body is
/// cut after about the grace rather than a whole `RateWindow`, while an
/// upload that keeps up never is. The windows apply as well.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    since: Instant,
    bytes: u64,
}

impl Pace {
    /// A request that began at `since` (a connection's first: at
    /// acceptance) with `bytes` (its head) received.
    pub fn new(since: Instant, bytes: u64) -> Self {
        Pace { since, bytes }
    }

    pub fn add(&mut self, n: u64) {
        self.bytes = self.bytes.saturating_add(n);
    }

    /// The server, not the client, was the slow party for `waited`.
    pub fn pause(&mut self, waited: Duration) {
        self.since += waited;
    }

    /// When the request falls behind, counting `unread` bytes arrived but
    /// not yet decoded; None with no minimum rate (or past any clock).
    pub fn deadline(&self, grace: Duration, rate: u64, unread: u64) -> Option<Instant> {
        if rate == 0 {
            return None;
        }
        let allowance = grace.saturating_add(earned(self.bytes.saturating_add(unread), rate));
        self.since.checked_add(allowance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn header_allowance_grows_at_the_rate_up_to_the_cap() {
        let a = |bytes| header_allowance(10 * S, 20 * S, 500, bytes);
        assert_eq!(a(0), 10 * S);
        assert_eq!(a(2500), 15 * S);
        assert_eq!(a(1 << 20), 20 * S);
        // No rate: no extension; a cap below the base does not cut it.
        assert_eq!(header_allowance(10 * S, 20 * S, 0, 1 << 20), 10 * S);
        assert_eq!(header_allowance(10 * S, S, 500, 1 << 20), 10 * S);
    }

    #[test]
    fn pace_gives_the_grace_plus_a_second_per_rate_bytes() {
        let t0 = Instant::now();
        let mut p = Pace::new(t0, 250);
        assert_eq!(
            p.deadline(S, 500, 0),
            Some(t0 + 1500 * Duration::from_millis(1))
        );
        // Bytes waiting unread count as arrived.
        assert_eq!(p.deadline(S, 500, 250), Some(t0 + 2 * S));
        p.add(4750);
        assert_eq!(p.deadline(S, 500, 0), Some(t0 + 11 * S));
        // The server's own wait moves the clock on.
        p.pause(3 * S);
        assert_eq!(p.deadline(S, 500, 0), Some(t0 + 14 * S));
        assert_eq!(p.deadline(S, 0, 0), None, "no minimum rate");
        assert!(Pace::new(t0, u64::MAX).deadline(S, 1, u64::MAX).is_none());
    }
}
