//! What a sweep prints on the terminal when it ends: one line per
//! configuration with its requests/s and interval, the ratio to the
//! baseline (with p99 and failures beside slow clients), the server's cost
//! per request and the status, through the one table writer; then the
//! runs that could not be made, and the findings.

use super::num::{fixed, mean_sd};
use super::sweep_tables::{per_request, ratio_cell, rps_cell, status_cell, KeyCols};
use super::table::{Align, Table};
use super::Inputs;
use crate::results::raw::RowStatus;

/// The sweep's table, failed and skipped runs, and findings, from what a
/// results directory holds (earlier runs of a resumed sweep too).
pub fn sweep_table(inputs: &Inputs) -> String {
    let s = inputs.summary();
    let many = s.experiments.len() > 1;
    let kc = KeyCols::new(s.groups.iter().map(|g| &g.key)).terse();
    let mut cols: Vec<(&str, Align)> = Vec::new();
    if many {
        cols.push(("experiment", Align::Left));
    }
    cols.extend(kc.headers());
    // Beside slow clients the question is the client's tail and failures.
    let slow = s.groups.iter().any(|g| !g.key.slow.is_none());
    if slow {
        cols.extend([("p99 ms", Align::Right), ("failed", Align::Right)]);
    }
    // At an offered rate the answer is latency (from the scheduled send).
    let open = !slow && s.groups.iter().any(|g| g.key.rate.is_some());
    if open {
        cols.extend([("p50 ms", Align::Right), ("p99 ms", Align::Right)]);
    }
    cols.extend([
        ("requests/s", Align::Right),
        ("vs baseline", Align::Right),
        ("CPU µs/req", Align::Right),
        ("ctx sw/req", Align::Right),
        ("status", Align::Left),
    ]);
    let mut table = Table::new("sweep", "", &cols);
    for (g, r) in s.groups.iter().zip(&s.rows) {
        let mut line = Vec::new();
        if many {
            line.push(g.key.experiment.clone());
        }
        line.extend(kc.cells(&g.key));
        if slow {
            // No answer at all: there is no latency to show.
            let p99 = match r.ok_responses + r.non_2xx {
                0 => "–".to_string(),
                _ => fixed(r.p99_ms_mean, 3),
            };
            line.extend([p99, r.failed.to_string()]);
        }
        if open {
            line.extend([
                mean_sd(r.p50_ms_mean, r.p50_ms_sd, r.runs, 3),
                mean_sd(r.p99_ms_mean, r.p99_ms_sd, r.runs, 3),
            ]);
        }
        line.extend([
            rps_cell(r),
            ratio_cell(r),
            per_request(r.server_cpu_us_per_req, 1),
            per_request(r.server_ctx_switches_per_req, 2),
            status_cell(r),
        ]);
        table.push(line);
    }
    let bases: Vec<String> = s
        .baselines
        .iter()
        .map(|(e, t)| {
            if many {
                format!("{t} in {e}")
            } else {
                t.clone()
            }
        })
        .collect();
    let mut o = String::new();
    if let Some(f) = &inputs.capacity {
        let t = super::capacity::table(f);
        o.push_str(&format!(
            "\nCapacity: {}\n\n",
            t.note.clone().unwrap_or_default()
        ));
        o.push_str(&t.to_terminal());
    }
    o.push_str(
        "\nRequests per second answered with 2xx/3xx: mean ± 95 % half-width over the repeats (Student's t)\n",
    );
    if !bases.is_empty() {
        o.push_str(&format!(
            "vs baseline: paired per-round ratio to {}\n",
            bases.join(", ")
        ));
    }
    o.push('\n');
    if !table.rows.is_empty() {
        o.push_str(&table.to_terminal());
    }
    for r in &inputs.raw {
        let (what, text) = match r.status() {
            RowStatus::Measured => continue,
            RowStatus::Failed(why) => ("error", why),
            RowStatus::Skipped(why) => ("skipped", why),
        };
        let at = if r.concurrency > 0 {
            format!(" c={}", r.concurrency)
        } else {
            String::new()
        };
        o.push_str(&format!("{what}: {}{at}: {text}\n", r.target));
    }
    let found = inputs.findings(&s);
    if !found.is_empty() {
        o.push_str("\nFindings\n");
        for f in &found {
            o.push_str(&format!("- {}\n", f.text));
        }
    }
    o
}
