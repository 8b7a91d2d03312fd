//! The `Date` header value, formatted at most once a second per thread.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

thread_local! {
    static CACHE: RefCell<(u64, [u8; 29])> = const { RefCell::new((u64::MAX, [0; 29])) };
}

/// Appends the current IMF-fixdate (29 bytes) to `out`. Formatting a date per
/// response is measurable at 100k req/s, so the text is cached per thread and
/// refreshed when the second changes.
pub fn append_http_date(out: &mut Vec<u8>) {
    let now = SystemTime::now();
    let secs = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != secs {
            let s = httpdate::fmt_http_date(now);
            let b = s.as_bytes();
            if b.len() == 29 {
                c.1.copy_from_slice(b);
                c.0 = secs;
            } else {
                out.extend_from_slice(b);
                return;
            }
        }
        out.extend_from_slice(&c.1);
    });
}

/// Formats a time as an IMF-fixdate (for Last-Modified).
pub fn http_date(t: SystemTime) -> String {
    httpdate::fmt_http_date(t)
}
