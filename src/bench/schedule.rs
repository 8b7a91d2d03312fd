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

/// One thread's open-loop schedule: its slot `k` is slot `k * stride +
/// phase` of a schedule at `rate` per second. A whole run's thread has
/// stride 1 and phase 0; shard `i` of `N` takes every N-th slot from the
/// i-th (stride N, phase i), so the shards' slots together are exactly the
/// slots one process at `rate` would have, with no float drift between them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slots {
    pub rate: f64,
    pub stride: u64,
    pub phase: u64,
}

impl Slots {
    /// Slot `k` of this schedule, counted from `origin`.
    pub fn at(&self, origin: Instant, k: u64) -> Instant {
        let j = k.saturating_mul(self.stride).saturating_add(self.phase);
        slot_time(origin, j, self.rate)
    }

    /// How many of this schedule's slots fall before `end`.
    pub fn before(&self, origin: Instant, end: Instant) -> u64 {
        let all = slots_before(origin, end, self.rate);
        // Slots j < all with j = k * stride + phase.
        all.saturating_sub(self.phase).div_ceil(self.stride.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_slots_together_are_one_processs_schedule() {
        let t0 = Instant::now();
        for (rate, shards) in [(1000.0, 4u64), (333.3, 3), (12_345.678, 7), (0.5, 2)] {
            let whole = Slots {
                rate,
                stride: 1,
                phase: 0,
            };
            let total = 1000;
            let mut union: Vec<Instant> = (0..shards)
                .flat_map(|i| {
                    let s = Slots {
                        rate,
                        stride: shards,
                        phase: i,
                    };
                    // Shard i's share of `total` slots (Shard::slot_share).
                    let n = (total - i).div_ceil(shards);
                    (0..n).map(move |k| s.at(t0, k))
                })
                .collect();
            union.sort();
            let one: Vec<Instant> = (0..total).map(|k| whole.at(t0, k)).collect();
            assert_eq!(union, one, "{rate}/s over {shards} shards");
            // And each shard counts its own slots before any end exactly.
            let end = t0 + Duration::from_millis(1234);
            let counted: u64 = (0..shards)
                .map(|i| {
                    Slots {
                        rate,
                        stride: shards,
                        phase: i,
                    }
                    .before(t0, end)
                })
                .sum();
            assert_eq!(counted, whole.before(t0, end), "{rate}/s");
        }
    }

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
