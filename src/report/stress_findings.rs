//! The stress page's findings: short sentences generated from stress rows.
//! Which model moved the most bytes per operation and size, where
//! aggregate throughput stops rising as clients are added, and which
//! transfers failed or came back with wrong bytes. Stress measures each
//! cell once, so no sentence claims more than one run can say.

use crate::results::stress::{size_label, Op, StressRow};

/// A rise of less than this from one client count to the next is "stopped
/// rising": one run per cell cannot tell smaller steps from noise.
const FLAT: f64 = 0.10;
/// Failed cells named one by one before the rest are counted.
const NAMED_FAILURES: usize = 5;

fn mb(bps: f64) -> String {
    format!("{:.1} MB/s", bps / 1e6)
}

/// "thread-pool with 5 workers", or "the external server".
fn server(model: &str, workers: Option<usize>) -> String {
    match workers {
        Some(1) => format!("{model} with 1 worker"),
        Some(w) => format!("{model} with {w} workers"),
        None => "the external server".to_string(),
    }
}

fn clients(n: usize) -> String {
    if n == 1 {
        "1 client".into()
    } else {
        format!("{n} clients")
    }
}

/// Every finding, in page order: failures first (they qualify everything
/// else), then the best model per operation and size, then the knees.
pub fn findings(rows: &[StressRow]) -> Vec<String> {
    if rows.is_empty() {
        return vec!["No cell was measured, so nothing can be concluded.".into()];
    }
    let mut out = failures(rows);
    let mut cases: Vec<(Op, u64)> = Vec::new();
    for r in rows {
        if !cases.contains(&(r.op, r.size)) {
            cases.push((r.op, r.size));
        }
    }
    cases.sort();
    for (op, size) in cases {
        let of: Vec<&StressRow> = rows
            .iter()
            .filter(|r| (r.op, r.size) == (op, size))
            .collect();
        out.push(best(op, size, &of));
        out.extend(knees(op, size, &of));
    }
    out
}

/// Failed and corrupt transfers, or one sentence saying there were none.
pub fn failures(rows: &[StressRow]) -> Vec<String> {
    let total: usize = rows.iter().map(|r| r.clients).sum();
    let failed: Vec<&StressRow> = rows.iter().filter(|r| r.failed > 0).collect();
    if failed.is_empty() {
        return vec![format!(
            "Every one of the {total} transfers succeeded and its bytes verified (SHA-256)."
        )];
    }
    let n: usize = failed.iter().map(|r| r.failed).sum();
    let mut out = vec![format!(
        "{n} of {total} transfers failed; throughput counts only verified transfers, so the \
         cells below moved less than they were asked to and their figures are not comparable \
         with the others."
    )];
    for r in failed.iter().take(NAMED_FAILURES) {
        let what = if wrong_bytes(&r.error) {
            "came back with wrong bytes"
        } else {
            "failed"
        };
        out.push(format!(
            "{} {} with {}, {}: {} of {} transfers {what} ({}).",
            r.op,
            size_label(r.size),
            clients(r.clients),
            server(&r.model, r.server_workers),
            r.failed,
            r.clients,
            r.error
        ));
    }
    if failed.len() > NAMED_FAILURES {
        out.push(format!(
            "{} more cells had failed transfers (see the table).",
            failed.len() - NAMED_FAILURES
        ));
    }
    out
}

/// The runner's words for a transfer whose bytes did not verify.
fn wrong_bytes(error: &str) -> bool {
    error.contains("sha256") || error.contains("bytes differ")
}

/// Which model's best cell moved the most bytes for one operation and size.
pub fn best(op: Op, size: u64, rows: &[&StressRow]) -> String {
    let case = format!("{op} {}", size_label(size));
    let mut models: Vec<&str> = Vec::new();
    for r in rows {
        if !models.contains(&r.model.as_str()) {
            models.push(&r.model);
        }
    }
    // Each model's best cell by aggregate throughput.
    let best_of = |m: &str| {
        rows.iter()
            .filter(|r| r.model == m && r.succeeded > 0)
            .max_by(|a, b| a.aggregate_bps.total_cmp(&b.aggregate_bps))
            .copied()
    };
    let mut bests: Vec<&StressRow> = models.iter().filter_map(|m| best_of(m)).collect();
    if bests.is_empty() {
        return format!("{case}: no transfer succeeded, so nothing can be compared.");
    }
    bests.sort_by(|a, b| b.aggregate_bps.total_cmp(&a.aggregate_bps));
    let cell = |r: &StressRow| {
        format!(
            "{} aggregate ({}, {})",
            mb(r.aggregate_bps),
            clients(r.clients),
            server(&r.model, r.server_workers)
        )
    };
    let top = bests[0];
    if bests.len() == 1 {
        return format!(
            "{case}: only {} moved data; its best cell was {}.",
            top.model,
            cell(top)
        );
    }
    let rest: Vec<String> = bests[1..]
        .iter()
        .map(|r| format!("{} for {}", mb(r.aggregate_bps), r.model))
        .collect();
    let margin = top.aggregate_bps / bests[1].aggregate_bps.max(1.0);
    let caveat = if margin < 1.0 + FLAT {
        " They are within 10 %, which one run per cell cannot tell apart."
    } else {
        ""
    };
    format!(
        "{case}: {} moved the most, {}, against {} at their best.{caveat}",
        top.model,
        cell(top),
        rest.join(", ")
    )
}

/// Per model (and worker count): the client count after which aggregate
/// throughput stops rising by more than `FLAT`, or that it still rose at
/// the most clients measured. One sentence per model.
pub fn knees(op: Op, size: u64, rows: &[&StressRow]) -> Vec<String> {
    let mut servers: Vec<(&str, Option<usize>)> = Vec::new();
    for r in rows {
        let s = (r.model.as_str(), r.server_workers);
        if !servers.contains(&s) {
            servers.push(s);
        }
    }
    let mut by_model: Vec<(&str, Vec<String>)> = Vec::new();
    for (model, workers) in servers {
        let mut line: Vec<&StressRow> = rows
            .iter()
            .filter(|r| (r.model.as_str(), r.server_workers) == (model, workers) && r.failed == 0)
            .copied()
            .collect();
        line.sort_by_key(|r| r.clients);
        if line.len() < 2 {
            continue;
        }
        let stop = line
            .windows(2)
            .find(|w| w[1].aggregate_bps < w[0].aggregate_bps * (1.0 + FLAT));
        let who = match workers {
            Some(w) => format!("with {w} worker{}", if w == 1 { "" } else { "s" }),
            None => "against the external server".to_string(),
        };
        let part = match stop {
            Some(w) => format!(
                "{} after {} {who} ({} there, {} at {})",
                if w[1].aggregate_bps < w[0].aggregate_bps * (1.0 - FLAT) {
                    "falls"
                } else {
                    "stops rising"
                },
                clients(w[0].clients),
                mb(w[0].aggregate_bps),
                mb(w[1].aggregate_bps),
                w[1].clients
            ),
            None => {
                let last = line[line.len() - 1];
                format!(
                    "still rises at {} {who} ({})",
                    clients(last.clients),
                    mb(last.aggregate_bps)
                )
            }
        };
        match by_model.iter_mut().find(|(m, _)| *m == model) {
            Some((_, parts)) => parts.push(part),
            None => by_model.push((model, vec![part])),
        }
    }
    by_model
        .into_iter()
        .map(|(model, parts)| {
            format!(
                "{op} {}, {model}: aggregate throughput {}.",
                size_label(size),
                parts.join("; ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    fn row(
        op: Op,
        model: &str,
        workers: usize,
        clients: usize,
        agg_mb: f64,
        failed: usize,
    ) -> StressRow {
        StressRow {
            op,
            size: 10 * MB,
            clients,
            server_workers: Some(workers),
            model: model.into(),
            total_s: 1.0,
            per_client_bps: agg_mb * 1e6 / clients as f64,
            aggregate_bps: agg_mb * 1e6,
            succeeded: clients - failed,
            failed,
            verified: clients - failed,
            error: if failed > 0 {
                "download of f3: got 10485760 bytes with sha256 ab12".into()
            } else {
                String::new()
            },
        }
    }

    #[test]
    fn best_model_per_operation_and_size() {
        // model subset: E2's thread pool and process pool.
        let rows = [
            row(Op::Download, "thread-pool", 5, 5, 400.0, 0),
            row(Op::Download, "prefork", 5, 5, 800.0, 0),
            row(Op::Download, "prefork", 5, 50, 700.0, 0),
        ];
        let refs: Vec<&StressRow> = rows.iter().collect();
        assert_eq!(
            best(Op::Download, 10 * MB, &refs),
            // model subset: the two models of the rows above.
            "download 10M: prefork moved the most, 800.0 MB/s aggregate (5 clients, prefork \
             with 5 workers), against 400.0 MB/s for thread-pool at their best."
        );
        // model subset: E2's thread pool and process pool.
        let close = [
            row(Op::Upload, "thread-pool", 1, 1, 100.0, 0),
            row(Op::Upload, "prefork", 1, 1, 105.0, 0),
        ];
        let refs: Vec<&StressRow> = close.iter().collect();
        assert!(best(Op::Upload, 10 * MB, &refs).contains("cannot tell apart"));
    }

    #[test]
    fn knee_where_throughput_stops_rising() {
        let rows = [
            row(Op::Upload, "thread-pool", 5, 1, 100.0, 0),
            row(Op::Upload, "thread-pool", 5, 5, 400.0, 0),
            row(Op::Upload, "thread-pool", 5, 50, 410.0, 0),
            row(Op::Upload, "thread-pool", 50, 1, 100.0, 0),
            row(Op::Upload, "thread-pool", 50, 50, 900.0, 0),
        ];
        let refs: Vec<&StressRow> = rows.iter().collect();
        let k = knees(Op::Upload, 10 * MB, &refs);
        assert_eq!(
            k,
            ["upload 10M, thread-pool: aggregate throughput stops rising after 5 clients with 5 \
              workers (400.0 MB/s there, 410.0 MB/s at 50); still rises at 50 clients with 50 \
              workers (900.0 MB/s)."]
        );
        // One client count: no knee to find, no sentence.
        let one = [row(Op::Upload, "prefork", 1, 1, 50.0, 0)];
        let refs: Vec<&StressRow> = one.iter().collect();
        assert!(knees(Op::Upload, 10 * MB, &refs).is_empty());
    }

    #[test]
    fn failed_and_corrupt_transfers_are_named() {
        let mut rows = vec![
            row(Op::Download, "prefork", 4, 10, 300.0, 3),
            row(Op::Download, "prefork", 4, 1, 100.0, 0),
        ];
        rows.push(StressRow {
            error: "receive: connection reset by peer".into(),
            ..row(Op::Upload, "thread-pool", 1, 2, 10.0, 2)
        });
        let f = failures(&rows);
        assert!(f[0].starts_with("5 of 13 transfers failed"), "{f:?}");
        assert!(f[1].contains("download 10M with 10 clients, prefork with 4 workers: 3 of 10 transfers came back with wrong bytes"), "{f:?}");
        assert!(
            f[2].contains("2 of 2 transfers failed (receive: connection reset by peer)"),
            "{f:?}"
        );
        // Every transfer of the upload failed: nothing to compare there.
        let all = findings(&rows);
        assert!(
            all.iter()
                .any(|s| s == "upload 10M: no transfer succeeded, so nothing can be compared."),
            "{all:?}"
        );
        let clean = failures(&rows[1..2]);
        assert_eq!(
            clean,
            ["Every one of the 1 transfers succeeded and its bytes verified (SHA-256)."]
        );
    }

    #[test]
    fn nothing_measured_concludes_nothing() {
        assert_eq!(
            findings(&[]),
            ["No cell was measured, so nothing can be concluded."]
        );
    }
}
