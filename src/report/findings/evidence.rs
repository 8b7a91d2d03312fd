//! Findings from what each run recorded beyond its figures: answers
//! counted with a violation, and the kernel's TCP counters (a listen queue
//! that overflowed, other traffic beside the runs), per target; and the
//! host's own load at the start and end of the sweep.

use super::{Finding, Kind};
use crate::report::summary::{SummaryRow, SweepSummary};
use crate::results::raw::Machine;
use crate::results::sweep_info::SweepInfo;

/// Per target, what its runs' evidence says: answers counted with a
/// violation, a listen queue that overflowed, other traffic beside it.
pub fn sentences(s: &SweepSummary) -> Vec<Finding> {
    let mut targets: Vec<&str> = Vec::new();
    for g in &s.groups {
        if !targets.contains(&g.key.target.as_str()) {
            targets.push(&g.key.target);
        }
    }
    let mut out: Vec<Finding> = targets.iter().flat_map(|t| of_target(s, t)).collect();
    out.extend(burners(s));
    out
}

/// The targets that burned CPU while another was measured, each with the
/// runs it disturbed and the most of a core it took.
fn burners(s: &SweepSummary) -> Vec<Finding> {
    // (label, runs disturbed, highest % of a core), in first-seen order.
    let mut seen: Vec<(String, usize, f64)> = Vec::new();
    let runs = s.groups.iter().flat_map(|g| &g.runs);
    for r in runs {
        for part in r.disturbed_by.as_deref().unwrap_or("").split("; ") {
            let Some((label, rest)) = part.rsplit_once(" (") else {
                continue;
            };
            let pct: f64 = rest
                .split(' ')
                .next()
                .and_then(|p| p.parse().ok())
                .unwrap_or(0.0);
            match seen.iter_mut().find(|(l, _, _)| l == label) {
                Some((_, n, top)) => {
                    *n += 1;
                    *top = top.max(pct);
                }
                None => seen.push((label.to_string(), 1, pct)),
            }
        }
    }
    seen.into_iter()
        .map(|(label, n, top)| Finding {
            kind: Kind::BusyIdle,
            text: format!(
                "{label} burned CPU while it was not under load (up to {top:.0} % of a core): {n} runs of other targets made meanwhile are marked disturbed, and their figures had less of the machine. A thread that spins after its client closed, or a loop that polls, does this; `loadlab check` names it (busy-when-idle)."
            ),
        })
        .collect()
}

fn of_target(s: &SweepSummary, target: &str) -> Vec<Finding> {
    let rows: Vec<&SummaryRow> = s
        .groups
        .iter()
        .zip(&s.rows)
        .filter(|(g, _)| g.key.target == target)
        .map(|(_, r)| r)
        .collect();
    let sum = |f: fn(&SummaryRow) -> Option<u64>| rows.iter().filter_map(|r| f(r)).sum::<u64>();
    let mut out = Vec::new();
    let violations = sum(|r| r.violations);
    if violations > 0 {
        let kinds = kinds_of(s, target);
        out.push(Finding {
            kind: Kind::Violations,
            text: format!(
                "{target}: {violations} answers broke a rule ({kinds}) yet were counted as answered: its requests/s stands, the server needs a fix (the Targets section, or `loadlab check`, names it)."
            ),
        });
    }
    let (over, drops) = (sum(|r| r.tcp_listen_overflows), sum(|r| r.tcp_listen_drops));
    if over + drops > 0 {
        out.push(Finding {
            kind: Kind::Kernel,
            text: format!(
                "{target}: the kernel counted {over} listen-queue overflows and {drops} drops over its runs: connects waited for SYN retransmissions (1 s, 3 s...), which shows as connect times and p99. A larger listen() backlog fixes it (the counters are the namespace's: other servers count too)."
            ),
        });
    }
    let others = sum(|r| r.tcp_other_opens);
    if others > 0 {
        out.push(Finding {
            kind: Kind::Kernel,
            text: format!(
                "{target}: {others} connections beyond loadlab's own were opened in this network namespace during its runs: other traffic shared the machine."
            ),
        });
    }
    out
}

/// The violation kinds of `target`'s runs with their counts, summed from
/// raw.csv's `kind n; kind n` cells.
fn kinds_of(s: &SweepSummary, target: &str) -> String {
    let mut by: std::collections::BTreeMap<&str, u64> = Default::default();
    let runs = s
        .groups
        .iter()
        .filter(|g| g.key.target == target)
        .flat_map(|g| &g.runs);
    for r in runs {
        for part in r.violation_kinds.as_deref().unwrap_or("").split("; ") {
            if let Some((k, n)) = part.rsplit_once(' ') {
                *by.entry(k).or_default() += n.parse::<u64>().unwrap_or(0);
            }
        }
    }
    let parts: Vec<String> = by.iter().map(|(k, n)| format!("{k} {n}")).collect();
    parts.join(", ")
}

/// The host was busy at the start or end of the sweep.
pub fn busy_host(info: Option<&SweepInfo>, machine: Option<&Machine>) -> Option<Finding> {
    let info = info?;
    let cores = machine.map(|m| m.cores);
    let mut parts = Vec::new();
    for (when, h) in [("start", &info.host_start), ("end", &info.host_end)] {
        if let Some(h) = h {
            let why = h.busy_reasons(cores, when == "end");
            if !why.is_empty() {
                parts.push(format!("at the {when}, {}", why.join("; ")));
            }
        }
    }
    (!parts.is_empty()).then(|| Finding {
        kind: Kind::BusyHost,
        text: format!(
            "The host was busy ({}): the results may be slower and noisier than on a quiet machine.",
            parts.join("; ")
        ),
    })
}
