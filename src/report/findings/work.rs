//! Why the costs differ, from the server accounting (on unless `sweep
//! --no-accounting`): per setting, each target's syscalls per request by
//! kind and its context switches, costliest first, so the cost ranking
//! above it reads with its cause beside it ("thread-per-conn: 25.1
//! syscalls (other 19.1, clone+exit 2.0, ...)").

use super::{at, but_target, sets, Cell, Finding, Kind, Words};
use crate::report::num::fixed;
use crate::results::accounting::SyscallKind;

/// "read 1.00, write 1.00, epoll_wait 0.26": the kinds a cell made at
/// least 0.05 of per request, most first.
pub(super) fn kinds(c: &Cell) -> String {
    let mut v: Vec<(SyscallKind, f64)> = SyscallKind::ALL
        .iter()
        .filter_map(|&k| c.r.sys_per_req(k).map(|n| (k, n)))
        .filter(|(_, n)| *n >= 0.05)
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v.iter()
        .map(|(k, n)| format!("{} {}", k.label(), fixed(*n, 2)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One finding per setting where two targets or more were counted.
pub fn sentences(cells: &[Cell], w: &Words) -> Vec<Finding> {
    let mut out = Vec::new();
    for set in sets(cells, but_target) {
        let mut counted: Vec<&Cell> = set
            .iter()
            .filter(|c| c.r.syscalls_per_req.is_some())
            .collect();
        if counted.len() < 2 {
            continue;
        }
        // Costliest first: the cost ranking read from its other end.
        counted.sort_by(|a, b| {
            let cost = |c: &Cell| c.r.server_cpu_us_per_req.unwrap_or(0.0);
            cost(b).total_cmp(&cost(a))
        });
        let parts: Vec<String> = counted
            .iter()
            .map(|c| {
                format!(
                    "{}: {} syscalls ({}), {} context switches",
                    w.target(&c.g.key),
                    fixed(c.r.syscalls_per_req.unwrap_or(0.0), 2),
                    kinds(c),
                    c.r.switches_counted_per_req
                        .map_or("n/a".into(), |s| fixed(s, 2))
                )
            })
            .collect();
        out.push(Finding {
            kind: Kind::Work,
            text: match at(&w.setting(&counted[0].g.key, true)) {
                at if at.is_empty() => {
                    format!("Why, per request, costliest first: {}.", parts.join("; "))
                }
                at => format!(
                    "{at}why, per request, costliest first: {}.",
                    parts.join("; ")
                ),
            },
        });
    }
    out
}
