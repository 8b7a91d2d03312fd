//! What each request cost the server in kernel work, as a table per
//! experiment: syscalls by kind and context switches (perf's counts),
//! run-queue wait and the user share of its CPU. These say why a model
//! costs what it does: a thread per connection pays a clone and an exit
//! for each, an event loop a read, a write and part of an epoll_wait.

use super::summary::SweepSummary;
use super::sweep_tables::{of_experiment, KeyCols};
use super::table::{Align, Table};
use crate::report::num::fixed;
use crate::results::accounting::SyscallKind;

fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or("n/a".into(), |v| fixed(v, decimals))
}

/// The configurations of `experiment` with counted syscalls; None when
/// perf counted none of its runs (the sweep's notes say why).
pub fn table(s: &SweepSummary, experiment: &str) -> Option<Table> {
    let pairs: Vec<_> = of_experiment(s, experiment)
        .into_iter()
        .filter(|(_, r)| r.syscalls_per_req.is_some())
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let kc = KeyCols::new(pairs.iter().map(|(g, _)| &g.key));
    let mut cols = kc.headers();
    cols.push(("syscalls", Align::Right));
    cols.extend(SyscallKind::ALL.iter().map(|k| (k.label(), Align::Right)));
    cols.extend([
        ("switches", Align::Right),
        ("run-queue µs", Align::Right),
        ("user %", Align::Right),
    ]);
    let ring = pairs.iter().any(|(_, r)| r.ring_ops_per_req.is_some());
    if ring {
        cols.push(("ring submissions", Align::Left));
    }
    let mut t = Table::new(
        &format!("work-{}", super::sweep_tables::slug(experiment)),
        &format!("{experiment}: server work per request"),
        &cols,
    );
    t.note = Some(
        "Per completed request: the server's syscalls (every process and thread, counted by perf's tracepoints) by kind and its context switches (perf), both counted in a short unmeasured pass of each cell before its first run, since the counters slow every syscall on the host (docs/PERFORMANCE.md); the time its threads waited ready for a CPU (schedstat; a lower bound where threads exited during a run) and the share of its CPU time in user space (the rest is the kernel's), over the measured runs. io-uring's reads and sends are ring entries, not syscalls: its ring submissions by opcode are the last column. n/a: not counted.".into(),
    );
    for (g, r) in pairs {
        let mut c = kc.cells(&g.key);
        c.push(cell(r.syscalls_per_req, 2));
        c.extend(SyscallKind::ALL.iter().map(|&k| cell(r.sys_per_req(k), 2)));
        c.push(cell(r.switches_counted_per_req, 2));
        c.push(cell(r.runq_wait_us_per_req, 1));
        c.push(cell(r.cpu_user_pct, 0));
        if ring {
            c.push(ring_cell(r.ring_ops_per_req.as_deref()));
        }
        t.push(c);
    }
    Some(t)
}

/// `op=n` pairs as `op n, op n`, the most frequent first, rare ones left
/// out: what a reader compares is the entries a request costs.
fn ring_cell(ops: Option<&str>) -> String {
    let Some(ops) = ops else { return "none".into() };
    let mut pairs: Vec<(String, f64)> = crate::results::accounting::ring_ops(ops)
        .into_iter()
        .filter(|&(_, n)| n >= 0.005)
        .collect();
    pairs.sort_by(|a, b| b.1.total_cmp(&a.1));
    if pairs.is_empty() {
        return "< 0.01".into();
    }
    pairs
        .iter()
        .map(|(op, n)| format!("{op} {}", fixed(*n, 2)))
        .collect::<Vec<_>>()
        .join(", ")
}
