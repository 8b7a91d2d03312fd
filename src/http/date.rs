//! The `Date` header value, formatted at most once a second per thread.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

/// The formatted date of one second, kept and refreshed only when the
/// second changes, so a busy server formats once a second, not per response.
#[derive(Debug)]
pub struct DateCache {
    secs: u64,
    text: [u8; 29],
    /// How many times the text was formatted (for tests and profiling).
    pub refreshes: u64,
}

impl Default for DateCache {
    fn default() -> Self {
        DateCache::new()
    }
}

impl DateCache {
    /// Const, so that the thread-local cache needs no first-use check.
    const fn new() -> Self {
        DateCache {
            secs: u64::MAX,
            text: [0; 29],
            refreshes: 0,
        }
    }

    /// The IMF-fixdate (29 bytes) for `now`, formatted only if `now` falls
    /// in another second than the cached text.
    pub fn at(&mut self, now: SystemTime) -> &[u8] {
        let secs = now
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        self.at_secs(secs)
    }

    /// The same for a time given in whole seconds since the epoch: the
    /// per-response path compares those and builds a `SystemTime` only
    /// when the second changed.
    fn at_secs(&mut self, secs: u64) -> &[u8] {
        if self.secs != secs {
            let s = httpdate::fmt_http_date(UNIX_EPOCH + std::time::Duration::from_secs(secs));
            // IMF-fixdate is always 29 bytes for years 1000..9999.
            if let Ok(text) = <[u8; 29]>::try_from(s.as_bytes()) {
                self.text = text;
                self.secs = secs;
                self.refreshes += 1;
            }
        }
        &self.text
    }
}

thread_local! {
    static CACHE: RefCell<DateCache> = const { RefCell::new(DateCache::new()) };
}

/// Appends the current IMF-fixdate to `out`, from this thread's cache.
pub fn append_http_date(out: &mut Vec<u8>) {
    let secs = coarse_secs();
    CACHE.with(|c| out.extend_from_slice(c.borrow_mut().at_secs(secs)));
}

/// The wall-clock second as of the last timer tick (a few milliseconds at
/// most behind), which is all a Date with whole seconds needs. Read from
/// the vDSO's copy without the TSC read and arithmetic of a precise time,
/// as it is read once per response.
fn coarse_secs() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to write.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) } != 0 {
        return SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
    }
    ts.tv_sec as u64
}

/// Formats a time as an IMF-fixdate (for Last-Modified).
pub fn http_date(t: SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_once_per_second() {
        let mut c = DateCache::default();
        let t0 = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let first = c.at(t0).to_vec();
        assert_eq!(first, b"Tue, 14 Nov 2023 22:13:20 GMT");
        // Later in the same second: the cached text, not a new format.
        let same = c.at(t0 + Duration::from_millis(999)).to_vec();
        assert_eq!(same, first);
        assert_eq!(c.refreshes, 1);
        // The next second refreshes it once.
        let next = c.at(t0 + Duration::from_millis(1000)).to_vec();
        assert_eq!(next, b"Tue, 14 Nov 2023 22:13:21 GMT");
        c.at(t0 + Duration::from_millis(1500));
        assert_eq!(c.refreshes, 2);
    }

    #[test]
    fn appends_a_current_fixdate() {
        let mut out = Vec::new();
        append_http_date(&mut out);
        let text = std::str::from_utf8(&out).unwrap();
        let parsed = httpdate::parse_http_date(text).unwrap();
        let skew = SystemTime::now()
            .duration_since(parsed)
            .unwrap_or_else(|e| e.duration());
        assert!(skew < Duration::from_secs(5), "{text}");
    }
}
