//! Latency histogram buckets people can read without an HdrHistogram
//! library: oha's linear buckets from the fastest to the slowest time,
//! counted exactly (to the histogram's 3 significant digits).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Buckets per histogram, as oha's text histogram has.
pub const HISTOGRAM_BUCKETS: usize = 11;

/// Times above the previous bucket's bound, up to this one's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    /// Upper bound, milliseconds (the first bucket holds the fastest time).
    pub le_ms: f64,
    pub count: u64,
}

/// [`HISTOGRAM_BUCKETS`] evenly spaced bounds from the fastest time to the
/// slowest, each with the times above the bound before it and up to it;
/// one bucket when every time is the same, none for an empty histogram.
pub fn linear_buckets(h: &Histogram<u64>) -> Vec<Bucket> {
    if h.is_empty() {
        return Vec::new();
    }
    let min = h.lowest_equivalent(h.min());
    let max = h.highest_equivalent(h.max());
    let ms = |us: f64| us / 1000.0;
    if min >= max {
        return vec![Bucket {
            le_ms: ms(max as f64),
            count: h.len(),
        }];
    }
    let step = (max - min) as f64 / (HISTOGRAM_BUCKETS - 1) as f64;
    let mut out: Vec<Bucket> = (0..HISTOGRAM_BUCKETS)
        .map(|i| Bucket {
            // Whole microseconds: times are whole, so a time is within
            // the bound exactly when it is within its floor.
            le_ms: ms((min as f64 + step * i as f64).floor()),
            count: 0,
        })
        .collect();
    for v in h.iter_recorded() {
        // A recorded value stands for its whole HDR bucket; its lowest
        // value places it, so the fastest time falls in the first bucket.
        let at = h.lowest_equivalent(v.value_iterated_to()).clamp(min, max);
        let i = (((at - min) as f64 / step).ceil() as usize).min(HISTOGRAM_BUCKETS - 1);
        out[i].count += v.count_at_value();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::new_histogram;

    #[test]
    fn buckets_span_fastest_to_slowest_and_hold_every_time() {
        let mut h = new_histogram();
        assert!(linear_buckets(&h).is_empty());
        h.record(1000).unwrap();
        assert_eq!(
            linear_buckets(&h),
            [Bucket {
                le_ms: 1.0,
                count: 1
            }]
        );
        // 1 ms to 11 ms: bounds about 1 ms apart; 1 ms alone in the first,
        // each bucket holding the times above the bound before it.
        for ms in [1, 2, 2, 6, 11] {
            h.record(ms * 1000).unwrap();
        }
        let b = linear_buckets(&h);
        assert_eq!(b.len(), HISTOGRAM_BUCKETS);
        let counts: Vec<u64> = b.iter().map(|b| b.count).collect();
        assert_eq!(counts, [2, 2, 0, 0, 0, 1, 0, 0, 0, 0, 1], "{b:?}");
        assert_eq!(counts.iter().sum::<u64>(), h.len());
        assert!((b[0].le_ms - 1.0).abs() < 0.01, "{b:?}");
        assert!((b[10].le_ms - 11.0).abs() < 0.01, "{b:?}");
    }
}
