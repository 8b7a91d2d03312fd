//! A cell's outcome: each client's transfer, and the row the cell becomes
//! (only verified transfers count as succeeded or as throughput).

use std::time::Instant;

use super::matrix::Cell;
use crate::results::stress::StressRow;

/// One client's transfer.
pub(super) struct Outcome {
    pub start: Instant,
    pub end: Instant,
    /// The server answered with success and the bytes matched: the only
    /// way a transfer counts as succeeded.
    pub verified: bool,
    pub error: Option<String>,
}

/// A cell's row. Only verified transfers count as succeeded and only they
/// count towards throughput: a fast transfer of wrong bytes is a failure,
/// not a speed. The cell's time spans every client, failed ones included.
pub(super) fn row(cell: &Cell, outcomes: &[Outcome]) -> StressRow {
    let first = outcomes.iter().map(|o| o.start).min();
    let last = outcomes.iter().map(|o| o.end).max();
    let total_s = match (first, last) {
        (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
        _ => 0.0,
    };
    let ok: Vec<&Outcome> = outcomes.iter().filter(|o| o.verified).collect();
    let per_client_bps = if ok.is_empty() {
        0.0
    } else {
        ok.iter()
            .map(|o| cell.size as f64 / o.end.duration_since(o.start).as_secs_f64().max(1e-9))
            .sum::<f64>()
            / ok.len() as f64
    };
    StressRow {
        op: cell.op,
        size: cell.size,
        clients: cell.clients,
        server_workers: cell.server.map(|(_, w)| w),
        model: cell
            .server
            .map_or("external".into(), |(m, _)| m.name().into()),
        total_s,
        per_client_bps,
        aggregate_bps: if total_s > 0.0 {
            (ok.len() as u64 * cell.size) as f64 / total_s
        } else {
            0.0
        },
        succeeded: ok.len(),
        failed: outcomes.len() - ok.len(),
        verified: ok.len(),
        error: outcomes
            .iter()
            .find_map(|o| o.error.clone())
            .unwrap_or_default(),
    }
}

pub(super) fn failed(msg: &str) -> Outcome {
    let now = Instant::now();
    Outcome {
        start: now,
        end: now,
        verified: false,
        error: Some(msg.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::models::Model;
    use crate::stress::matrix::Op;
    use std::time::Duration;

    fn outcome(t0: Instant, ms: u64, verified: bool) -> Outcome {
        Outcome {
            start: t0,
            end: t0 + Duration::from_millis(ms),
            verified,
            error: (!verified).then(|| "sha256 differs".to_string()),
        }
    }

    #[test]
    fn a_transfer_that_does_not_verify_is_failed_and_not_throughput() {
        let cell = Cell {
            op: Op::Upload,
            size: 1_000_000,
            clients: 3,
            server: Some((Model::ThreadPool, 1)),
        };
        let t0 = Instant::now();
        // Two verified transfers of 1 s and 2 s, and a fast one (0.5 s)
        // whose bytes were wrong.
        let r = row(
            &cell,
            &[
                outcome(t0, 1000, true),
                outcome(t0, 2000, true),
                outcome(t0, 500, false),
            ],
        );
        assert_eq!((r.succeeded, r.failed, r.verified), (2, 1, 2));
        assert_eq!(r.succeeded + r.failed, cell.clients);
        assert!((r.total_s - 2.0).abs() < 1e-9);
        // Mean of 1 MB/s and 0.5 MB/s; the failed one's 2 MB/s is ignored.
        assert!(
            (r.per_client_bps - 750_000.0).abs() < 1.0,
            "{}",
            r.per_client_bps
        );
        // 2 MB verified over the cell's 2 s.
        assert!(
            (r.aggregate_bps - 1_000_000.0).abs() < 1.0,
            "{}",
            r.aggregate_bps
        );
        assert_eq!(r.error, "sha256 differs");
    }

    #[test]
    fn a_cell_with_no_verified_transfer_has_no_throughput() {
        let cell = Cell {
            op: Op::Download,
            size: 10,
            clients: 2,
            server: None,
        };
        let r = row(&cell, &[failed("timed out"), failed("timed out")]);
        assert_eq!((r.succeeded, r.failed, r.verified), (0, 2, 0));
        assert_eq!((r.per_client_bps, r.aggregate_bps), (0.0, 0.0));
        assert_eq!(r.model, "external");
    }
}
