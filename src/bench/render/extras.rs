//! What oha and hey users look for in a report, after ab's and under
//! loadlab's own lines: responses by status code and a latency histogram;
//! and what none of them shows: rules the answers broke, and the kernel's
//! TCP counters over the run.
//! Their headings are oha's and hey's, so scripts that look for those find
//! them; nothing here starts with one of ab's labels.

use std::fmt::Write;

use hdrhistogram::Histogram;

use crate::bench::buckets::linear_buckets;
use crate::bench::result::BenchResult;
use crate::bench::stats::Stats;
use crate::bench::violations;

/// Width of the longest bar of the text histogram, in characters.
const BAR_WIDTH: usize = 40;

/// "Status code distribution:" as hey and oha print it, one line per code
/// seen, e.g. `  [200] 1000 responses`.
pub fn status_distribution(o: &mut String, s: &Stats) {
    let _ = writeln!(o, "\nStatus code distribution:");
    let mut any = false;
    for (code, n) in s.status_codes.seen() {
        any = true;
        let _ = writeln!(
            o,
            "  [{code}] {n} response{}",
            if n == 1 { "" } else { "s" }
        );
    }
    // Runs read from files written before codes were recorded
    // (loadlab.bench/v1) have classes only: say so rather than undercount.
    let classes = s
        .status_classes
        .iter()
        .fold(0u64, |a, &b| a.saturating_add(b));
    let unknown = classes.saturating_sub(s.status_codes.total());
    if unknown > 0 {
        any = true;
        let _ = writeln!(
            o,
            "  [???] {unknown} responses whose code the input file did not record (loadlab.bench/v1)"
        );
    }
    if !any {
        let _ = writeln!(o, "  (no response)");
    }
}

/// oha's "Response time histogram", in milliseconds: the times above the
/// previous bound up to each bound, from the fastest to the slowest.
pub fn latency_histogram(o: &mut String, h: &Histogram<u64>) {
    let _ = writeln!(o, "\nResponse time histogram (ms):");
    let buckets = linear_buckets(h);
    if buckets.is_empty() {
        let _ = writeln!(o, "  (no answered request)");
        return;
    }
    let labels: Vec<String> = buckets.iter().map(|b| format!("{:.3}", b.le_ms)).collect();
    let counts: Vec<String> = buckets.iter().map(|b| format!("[{}]", b.count)).collect();
    let lw = labels.iter().map(String::len).max().unwrap_or(0);
    let cw = counts.iter().map(String::len).max().unwrap_or(0);
    let most = buckets.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    for ((label, count), b) in labels.iter().zip(&counts).zip(&buckets) {
        let bar = "■".repeat((b.count as f64 / most as f64 * BAR_WIDTH as f64) as usize);
        let _ = writeln!(o, "  {label:>lw$} {count:<cw$} |{bar}");
    }
}

/// Answers that broke a rule but counted: each kind with its count, rule
/// and fix, and its first example.
pub fn violations(o: &mut String, s: &Stats) {
    if s.violations.is_empty() {
        return;
    }
    let _ = writeln!(o, "  Violations by kind (answers counted as answered):");
    for (k, seen) in &s.violations {
        let _ = writeln!(o, "    {:>8}  {k}: {}", seen.count, violations::fix_of(k));
        if !seen.example.is_empty() {
            let _ = writeln!(o, "              first: {}", seen.example);
        }
    }
    if s.violation_closes > 0 {
        let _ = writeln!(
            o,
            "  Keep-alive connections closed after a violation: {}",
            s.violation_closes
        );
    }
}

/// The kernel's TCP counters over the run, when they could be read.
pub fn kernel_tcp(o: &mut String, r: &BenchResult) {
    let Some(k) = &r.kernel_tcp else { return };
    let parts: Vec<String> = k.iter().map(|(n, v)| format!("{n} {v}")).collect();
    let own = r.stats.connects;
    let others = match crate::sys::tcp::other_opens(k.get("ActiveOpens").copied(), own) {
        Some(n) => format!("; {n} opens beyond loadlab's {own}: other traffic"),
        None => String::new(),
    };
    let _ = writeln!(
        o,
        "  Kernel TCP counters over the run (this network namespace, other traffic included): {}{others}",
        parts.join(", ")
    );
}
