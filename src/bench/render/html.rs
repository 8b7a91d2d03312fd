//! ab's `-w` report: its HTML table, row for row and attribute for
//! attribute (`-x` on the table, `-y` on every tr, `-z` on every th and
//! td), so a page built from ab's tables takes loadlab's unchanged.

use std::fmt::Write;

use hdrhistogram::Histogram;

use super::ab::{round_ms, version_line};
use crate::bench::result::BenchResult;

/// ab's -x, -y and -z: attribute text put inside the tags as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HtmlAttrs {
    pub table: String,
    pub tr: String,
    pub cell: String,
}

impl Default for HtmlAttrs {
    /// ab's defaults: nothing on the table and rows, a white background
    /// on the cells.
    fn default() -> Self {
        HtmlAttrs {
            table: String::new(),
            tr: String::new(),
            cell: "bgcolor=white".into(),
        }
    }
}

/// Text from the server or the URL, safe between tags (ab copies it raw;
/// for ordinary values the two are the same).
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Min, mean and max in whole milliseconds, as ab's table rounds them;
/// the mean is ab's integer division of the rounded sum.
fn min_avg_max(h: &Histogram<u64>) -> (i64, i64, i64) {
    if h.is_empty() {
        return (0, 0, 0);
    }
    let n = h.len() as i64;
    let sum = round_ms(h.mean() * h.len() as f64);
    (round_ms(h.min() as f64), sum / n, round_ms(h.max() as f64))
}

/// The whole `-w` output: loadlab's banner as ab prints its own in HTML,
/// then ab's table.
pub fn html_report(r: &BenchResult, a: &HtmlAttrs) -> String {
    let (s, i) = (&r.stats, &r.info);
    let (tr, td) = (&a.tr, &a.cell);
    let mut o = String::new();
    let _ = write!(o, "<p>\n {}<br>\n</p>\n", escape(&version_line()));
    let _ = write!(o, "\n\n<table {}>\n", a.table);
    let mut row = |label: &str, value: &str| {
        let _ = writeln!(
            o,
            "<tr {tr}><th colspan=2 {td}>{label}:</th><td colspan=2 {td}>{value}</td></tr>"
        );
    };
    row(
        "Server Software",
        &escape(s.server_software.as_deref().unwrap_or("")),
    );
    row("Server Hostname", &escape(&i.host));
    row("Server Port", &i.port.to_string());
    row("Document Path", &escape(&i.path));
    match i.accept_variable_length {
        true => row("Document Length", "Variable"),
        false => row(
            "Document Length",
            &format!("{} bytes", s.document_length.unwrap_or(0)),
        ),
    }
    row("Concurrency Level", &i.concurrency.to_string());
    row(
        "Time taken for tests",
        &format!("{:.3} seconds", r.seconds()),
    );
    row("Complete requests", &s.complete.to_string());
    row("Failed requests", &s.failed().to_string());
    if s.failed() > 0 {
        let f = s.failures;
        let _ = writeln!(
            o,
            "<tr {tr}><td colspan=4 {td} >   (Connect: {}, Length: {}, Exceptions: {})</td></tr>",
            f.connect, f.length, f.exceptions
        );
    }
    let mut row = |label: &str, value: &str| {
        let _ = writeln!(
            o,
            "<tr {tr}><th colspan=2 {td}>{label}:</th><td colspan=2 {td}>{value}</td></tr>"
        );
    };
    if s.non_2xx > 0 {
        row("Non-2xx responses", &s.non_2xx.to_string());
    }
    if i.keep_alive {
        row("Keep-Alive requests", &s.keep_alive_requests.to_string());
    }
    row("Total transferred", &format!("{} bytes", s.total_bytes));
    if s.body_sent > 0 {
        row("Total body sent", &s.body_sent.to_string());
    }
    row("HTML transferred", &format!("{} bytes", s.html_bytes));
    let secs = r.seconds();
    if secs > 0.0 {
        row(
            "Requests per second",
            &format!("{:.2}", r.requests_per_second()),
        );
        row(
            "Transfer rate",
            &format!("{:.2} kb/s received", r.transfer_rate_kbps()),
        );
        if s.body_sent > 0 {
            let sent = s.body_sent as f64 / 1024.0 / secs;
            for (v, what) in [(sent, "sent"), (sent + r.transfer_rate_kbps(), "total")] {
                let _ = writeln!(
                    o,
                    "<tr {tr}><td colspan=2 {td}>&nbsp;</td><td colspan=2 {td}>{v:.2} kb/s {what}</td></tr>"
                );
            }
        }
    }
    let l = &s.latency;
    if !l.total.is_empty() {
        let con = min_avg_max(l.reported_connect());
        let tot = min_avg_max(l.reported());
        // ab's Processing row is Total less Connect, column by column.
        let pro = (tot.0 - con.0, tot.1 - con.1, tot.2 - con.2);
        let _ = writeln!(
            o,
            "<tr {tr}><th {td} colspan=4>Connection Times (ms)</th></tr>"
        );
        let _ = writeln!(
            o,
            "<tr {tr}><th {td}>&nbsp;</th> <th {td}>min</th>   <th {td}>avg</th>   <th {td}>max</th></tr>"
        );
        for (label, (min, avg, max)) in [("Connect", con), ("Processing", pro), ("Total", tot)] {
            let _ = writeln!(
                o,
                "<tr {tr}><th {td}>{label}:</th><td {td}>{min:5}</td><td {td}>{avg:5}</td><td {td}>{max:5}</td></tr>"
            );
        }
    }
    o.push_str("</table>\n");
    o
}
