//! The open-loop schedule: when each request of a `--rate` run is due,
//! as one formula every thread and every shard shares.

use std::time::{Duration, Instant};

/// Schedule offsets are capped here (about 31 years) so that slot times
/// stay representable whatever the rate and slot number.
pub const MAX_SCHEDULE_S: f64 = 1e9;

/// Send time of slot `k` on an open-loop schedule of `rate` per second
/// starting at `origin`.
pub fn slot_time(origin: Instant, k: u64, rate: f64) -> Instant {
    origin + Duration::from_secs_f64((k as f64 / rate).min(MAX_SCHEDULE_S))
}

/// How many slots of that schedule fall before `end`.
pub fn slots_before(origin: Instant, end: Instant, rate: f64) -> u64 {
    let span = end.saturating_duration_since(origin).as_secs_f64();
    let mut k = (span * rate).ceil() as u64;
    if span >= MAX_SCHEDULE_S {
        // Past the cap every slot time is the same; the estimate is exact
        // enough, and the loops below would not end.
        return k;
    }
    // Float rounding may put the estimate one off either way; settle it on
    // the exact formula the schedule itself uses.
    while k > 0 && slot_time(origin, k - 1, rate) >= end {
        k -= 1;
    }
    while slot_time(origin, k, rate) < end {
        k += 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_before_counts_the_slots_strictly_before_the_end() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        for (rate, span, want) in [
            (100.0, ms(1000), 100),
            (100.0, ms(1001), 101),
            (3.0, ms(1000), 3),
            (7.0, ms(0), 0),
            (1000.0, ms(1), 1),
            (0.5, ms(4500), 3),
        ] {
            assert_eq!(
                slots_before(t0, t0 + span, rate),
                want,
                "{rate}/s for {span:?}"
            );
        }
        // Whatever the rate, the count agrees with the schedule itself.
        for rate in [1.0 / 3.0, 33.3, 999.9, 12_345.678, 1e6] {
            let end = t0 + ms(1234);
            let k = slots_before(t0, end, rate);
            assert!(slot_time(t0, k, rate) >= end, "{rate}");
            assert!(k == 0 || slot_time(t0, k - 1, rate) < end, "{rate}");
        }
    }

    #[test]
    fn slot_times_stay_representable_at_absurd_rates() {
        let t0 = Instant::now();
        let far = slot_time(t0, u64::MAX, 1e-300);
        assert!(far > t0);
    }
}
