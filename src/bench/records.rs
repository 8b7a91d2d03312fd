//! Per-request records (`--per-request FILE`, ab's `-g FILE`): each
//! answered request's timings, kept in its load thread's own buffer (a
//! push per request, no IO on the hot path) and written after the run in
//! hey's CSV layout or ab's gnuplot TSV layout.

use std::fmt::Write as _;

/// Records a run keeps at most, 40 bytes each (about 160 MB), split
/// evenly over the load threads. A `-n` above it is refused before the
/// run; a `-t` run that finishes more requests keeps each thread's first
/// share and says on stderr how many were left out.
pub const MAX_RECORDS: u64 = 4_000_000;

/// One answered request's timings, µs (saturating at about 71 minutes,
/// beyond the latency histogram's hour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// When the request started, µs after measuring began.
    pub start_us: u64,
    /// Start to last response byte (the latency histogram's value).
    pub total_us: u32,
    /// Start to connection ready, TLS handshake included (0 on a reused
    /// keep-alive connection).
    pub connect_us: u32,
    /// Connection ready to request fully written.
    pub write_us: u32,
    /// Request written to first response byte (ab's "wait").
    pub wait_us: u32,
    /// Open loop: how far behind its scheduled send time it started.
    pub lag_us: u32,
    pub status: u16,
    /// Response body bytes (after chunked decoding).
    pub body_bytes: u64,
}

/// One thread's (or, gathered, one run's) records.
#[derive(Debug, Clone, Default)]
pub struct Records {
    pub rows: Vec<Record>,
    /// Most rows this buffer takes (0: recording is off).
    pub cap: usize,
    /// Answered requests not kept because the buffer was full.
    pub left_out: u64,
}

impl Records {
    /// A buffer for `cap` rows, room for `expect` of them made up front.
    pub fn with_cap(cap: usize, expect: Option<u64>) -> Records {
        let room = expect.map_or(0, |n| n.min(cap as u64) as usize);
        Records {
            rows: Vec::with_capacity(room),
            cap,
            left_out: 0,
        }
    }

    /// Whether recording is on.
    #[inline]
    pub fn on(&self) -> bool {
        self.cap > 0
    }

    #[inline]
    pub fn push(&mut self, r: Record) {
        if self.rows.len() < self.cap {
            self.rows.push(r);
        } else {
            self.left_out += 1;
        }
    }

    /// Gathers the threads' records, in order of start time.
    pub fn gather(parts: Vec<Records>) -> Records {
        let mut out = Records::default();
        for p in parts {
            out.cap += p.cap;
            out.left_out += p.left_out;
            if out.rows.is_empty() {
                out.rows = p.rows;
            } else {
                out.rows.extend_from_slice(&p.rows);
            }
        }
        out.rows.sort_by_key(|r| r.start_us);
        out
    }
}

/// The `--per-request` CSV header: hey's `-o csv` columns, in hey's order
/// and with hey's names, then loadlab's own (docs/guide/bench.md).
pub const PER_REQUEST_HEADER: &str = "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset,bytes,schedule-lag";

/// ab's `-g` header, byte for byte.
pub const GNUPLOT_HEADER: &str = "starttime\tseconds\tctime\tdtime\tttime\twait";

/// Seconds with microsecond digits (hey prints four; a loopback request
/// takes less than 0.1 ms, so four would round most of them to zero).
fn secs(us: u64) -> String {
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

/// The `--per-request` CSV: one row per answered request, by start time.
pub fn per_request_csv(records: &Records) -> String {
    let mut out = String::with_capacity(64 * (records.rows.len() + 1));
    out.push_str(PER_REQUEST_HEADER);
    out.push('\n');
    for r in &records.rows {
        let (total, connect, write, wait) = (
            r.total_us as u64,
            r.connect_us as u64,
            r.write_us as u64,
            r.wait_us as u64,
        );
        let read = total.saturating_sub(connect + write + wait);
        let _ = writeln!(
            out,
            "{},{},0.000000,{},{},{},{},{},{},{}",
            secs(total),
            secs(connect),
            secs(write),
            secs(wait),
            secs(read),
            r.status,
            secs(r.start_us),
            r.body_bytes,
            secs(r.lag_us as u64),
        );
    }
    out
}

/// ab's `ap_round_ms`: µs to the nearest ms.
fn round_ms(us: u64) -> u64 {
    (us + 500) / 1000
}

/// ab's `-g` TSV: starttime (apr_ctime of the request's start, local
/// time), seconds (its Unix second), ctime (connect), dtime (total minus
/// connect), ttime (total), wait, in rounded ms. ab writes its rows after
/// sorting them by total time for its percentile table, so they come out
/// in that order; loadlab's do too (ties by start time).
pub fn gnuplot_tsv(records: &Records, start_unix_us: u64) -> String {
    let mut rows: Vec<&Record> = records.rows.iter().collect();
    rows.sort_by_key(|r| (r.total_us, r.start_us));
    let mut out = String::with_capacity(64 * (rows.len() + 1));
    out.push_str(GNUPLOT_HEADER);
    out.push('\n');
    for r in rows {
        let at = start_unix_us + r.start_us;
        let (total, connect) = (r.total_us as u64, r.connect_us as u64);
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{}",
            ctime(at / 1_000_000),
            at / 1_000_000,
            round_ms(connect),
            round_ms(total.saturating_sub(connect)),
            round_ms(total),
            round_ms(r.wait_us as u64),
        );
    }
    out
}

/// APR's `apr_ctime` in local time, e.g. "Wed Jun 30 21:49:08 1993" (the
/// day of the month zero-padded, unlike C's ctime).
fn ctime(unix_s: u64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = unix_s as libc::time_t;
    // SAFETY: localtime_r reads one time_t and fills one tm, both valid
    // for the call; it is the thread-safe form.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return unix_s.to_string();
        }
        tm
    };
    let name =
        |names: &[&'static str], i: libc::c_int| names.get(i as usize).copied().unwrap_or("?");
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} {}",
        name(&DAYS, tm.tm_wday),
        name(&MONTHS, tm.tm_mon),
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        tm.tm_year + 1900
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(start_us: u64, total_us: u32, connect_us: u32) -> Record {
        Record {
            start_us,
            total_us,
            connect_us,
            write_us: 3,
            wait_us: 1_600,
            lag_us: 0,
            status: 200,
            body_bytes: 500,
        }
    }

    #[test]
    fn a_full_buffer_counts_what_it_leaves_out() {
        let mut r = Records::with_cap(2, Some(10));
        assert!(r.on() && r.rows.capacity() >= 2);
        for i in 0..5 {
            r.push(rec(i, 1, 0));
        }
        assert_eq!((r.rows.len(), r.left_out), (2, 3));
        assert!(!Records::default().on());
        let g = Records::gather(vec![r.clone(), Records::with_cap(1, None)]);
        assert_eq!((g.rows.len(), g.cap, g.left_out), (2, 3, 3));
    }

    #[test]
    fn per_request_rows_split_the_total_into_hey_phases() {
        let csv = per_request_csv(&Records {
            rows: vec![rec(1_250_000, 2_000, 300)],
            cap: 1,
            left_out: 0,
        });
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some(PER_REQUEST_HEADER));
        assert_eq!(
            lines.next(),
            Some("0.002000,0.000300,0.000000,0.000003,0.001600,0.000097,200,1.250000,500,0.000000")
        );
    }

    #[test]
    fn gnuplot_rows_are_abs_sorted_by_total_time() {
        let recs = Records {
            rows: vec![rec(0, 2_600, 400), rec(10, 1_499, 0)],
            cap: 2,
            left_out: 0,
        };
        let tsv = gnuplot_tsv(&recs, 1_700_000_000_000_000);
        let rows: Vec<Vec<&str>> = tsv.lines().map(|l| l.split('\t').collect()).collect();
        assert_eq!(rows[0], GNUPLOT_HEADER.split('\t').collect::<Vec<_>>());
        assert_eq!(rows[1][1..], ["1700000000", "0", "1", "1", "2"]);
        assert_eq!(rows[2][1..], ["1700000000", "0", "2", "3", "2"]);
        // "Tue Nov 14 22:13:20 2023" in UTC; the shape holds in any zone.
        let t = rows[1][0];
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.ends_with("2023"), "{t}");
    }
}
