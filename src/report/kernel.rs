//! The kernel's TCP counters over a sweep's runs, as a table per
//! experiment: what the load did to the network stack (listen-queue
//! overflows, SYN retransmissions, resets, failed connects, other
//! programs' connects).

use super::summary::{SummaryRow, SweepSummary};
use super::sweep_tables::{of_experiment, KeyCols};
use super::table::{Align, Table};

/// The counters shown, as (column, what it counts, value).
type Counter = (&'static str, fn(&SummaryRow) -> Option<u64>);

const COUNTERS: [Counter; 6] = [
    ("listen overflows", |r| r.tcp_listen_overflows),
    ("listen drops", |r| r.tcp_listen_drops),
    ("SYN retransmits", |r| r.tcp_syn_retrans),
    ("resets sent", |r| r.tcp_out_rsts),
    ("failed connects", |r| r.tcp_attempt_fails),
    ("others' connects", |r| r.tcp_other_opens),
];

/// Whether any counter rose over the configuration's runs.
fn rose(r: &SummaryRow) -> bool {
    COUNTERS.iter().any(|(_, f)| f(r).is_some_and(|v| v > 0))
}

/// The configurations of `experiment` where a counter rose, with a note
/// for the rest; `None` when no run of it recorded the counters (an older
/// raw.csv, or a kernel that does not give them).
pub fn table(s: &SweepSummary, experiment: &str) -> Option<Table> {
    let pairs = of_experiment(s, experiment);
    if !pairs
        .iter()
        .any(|(_, r)| COUNTERS.iter().any(|(_, f)| f(r).is_some()))
    {
        return None;
    }
    let shown: Vec<_> = pairs.iter().filter(|(_, r)| rose(r)).collect();
    let kc = KeyCols::new(shown.iter().map(|(g, _)| &g.key));
    let mut cols = kc.headers();
    cols.push(("runs", Align::Right));
    cols.extend(COUNTERS.iter().map(|(name, _)| (*name, Align::Right)));
    let mut t = Table::new(
        &format!("kernel-{}", super::sweep_tables::slug(experiment)),
        &format!("{experiment}: kernel TCP counters"),
        &cols,
    );
    let rest = if shown.is_empty() {
        "None rose in any run."
    } else {
        "Configurations not listed: none rose."
    };
    t.note = Some(format!(
        "What the kernel's TCP counters rose by over the measured runs, summed. They count the whole network namespace, so other programs' traffic is in them; others' connects are opens beyond the load generator's own. n/a: not recorded. {rest}"
    ));
    for (g, r) in shown {
        let mut c = kc.cells(&g.key);
        c.push(r.runs.to_string());
        c.extend(
            COUNTERS
                .iter()
                .map(|(_, f)| f(r).map_or("n/a".into(), |v| v.to_string())),
        );
        t.push(c);
    }
    Some(t)
}
