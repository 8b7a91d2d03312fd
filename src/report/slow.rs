//! Slow clients (E6, `sweep --slow`): each cell measured beside slow
//! clients stands beside the same client alone (the `none` cell of the
//! same configuration, paired by `baseline::alone` in the summary), in
//! one table per experiment and in one finding per target.

use super::baseline::without_slow as alone;
use super::num::fixed;
use super::summary::{Group, SummaryRow, SweepSummary};
use super::sweep_tables::{of_experiment, slug, status_cell};
use super::table::{Align, Table};
use crate::results::config::RunConfig;

use Align::{Left, Right};

/// Whether an experiment measured any cell beside slow clients.
pub fn applies(s: &SweepSummary, experiment: &str) -> bool {
    of_experiment(s, experiment)
        .iter()
        .any(|(g, _)| !g.key.slow.is_none())
}

/// Timeouts summed over a cell's runs.
fn timeouts(g: &Group) -> u64 {
    g.runs.iter().map(|r| r.timeouts).sum()
}

/// The fewest slow connections still open at the end of a run.
fn held(g: &Group) -> u64 {
    g.runs.iter().map(|r| r.slow_held_at_end).min().unwrap_or(0)
}

/// One line per cell beside slow clients: its p99 and failures, the same
/// client's alone, and how many slow connections the server still held.
pub fn table(s: &SweepSummary, experiment: &str) -> Option<Table> {
    if !applies(s, experiment) {
        return None;
    }
    let mut t = Table::new(
        &format!("slow-{}", slug(experiment)),
        &format!("{experiment}: the client beside slow clients"),
        &[
            ("target", Left),
            ("c", Right),
            ("slow clients", Left),
            ("p99 alone (ms)", Right),
            ("p99 beside (ms)", Right),
            ("failed alone", Right),
            ("failed beside", Right),
            ("timeouts", Right),
            ("slow conns held at end (fewest)", Right),
            ("status", Left),
        ],
    );
    t.note = Some(
        "Each cell beside slow clients next to the same client alone (the none cell of the same \
configuration and rounds). p99: mean over the measured runs; failed and timeouts: totals. A \
server that closes slow connections holds fewer than were opened at the end (each closed one \
is reopened). A cell with no answer at all is denied: its p99 means nothing."
            .into(),
    );
    let no_answer = |r: &SummaryRow| r.ok_responses == 0 && r.non_2xx == 0;
    for (g, r) in of_experiment(s, experiment) {
        let k = &g.key;
        if k.slow.is_none() {
            continue;
        }
        let opt = |v: Option<String>| v.unwrap_or_else(|| "–".into());
        t.push(vec![
            k.target.clone(),
            k.concurrency.to_string(),
            k.slow.label(k.slow_conns),
            opt(r.no_slow_p99_ms.map(|p| fixed(p, 3))),
            if no_answer(r) {
                "denied".into()
            } else {
                fixed(r.p99_ms_mean, 3)
            },
            opt(r.no_slow_failed.map(|f| f.to_string())),
            r.failed.to_string(),
            timeouts(g).to_string(),
            held(g).to_string(),
            status_cell(r),
        ]);
    }
    Some(t)
}

/// One sentence per target of an experiment with slow cells: what each
/// attack did to the client, beside the client alone.
pub fn sentences(s: &SweepSummary) -> Vec<String> {
    let mut out = Vec::new();
    for exp in &s.experiments {
        if !applies(s, exp) {
            continue;
        }
        let cells = of_experiment(s, exp);
        // One line per target and setting, in the order first met.
        let mut lines: Vec<RunConfig> = Vec::new();
        for (g, _) in &cells {
            if !lines.contains(&alone(&g.key)) {
                lines.push(alone(&g.key));
            }
        }
        for line in &lines {
            let parts: Vec<String> = cells
                .iter()
                .filter(|(g, _)| !g.key.slow.is_none() && alone(&g.key) == *line)
                .map(|(g, r)| attack_words(g, r))
                .collect();
            if parts.is_empty() {
                continue;
            }
            let mut text = format!(
                "{} (c={}) beside slow clients: {}",
                line.target,
                line.concurrency,
                parts.join("; ")
            );
            if s.experiments.len() > 1 {
                text = format!("{exp}: {text}");
            }
            text.push('.');
            out.push(text);
        }
    }
    out
}

/// "header x2000: p99 0.210 ms (alone 0.120 ms), 0 failed" or "read
/// x2000: denied, no answer in 3 runs (4 timeouts)".
fn attack_words(g: &Group, r: &SummaryRow) -> String {
    let label = g.key.slow.label(g.key.slow_conns);
    if r.ok_responses == 0 && r.non_2xx == 0 {
        return format!(
            "{label}: denied, no answer in {} run{} ({} timeouts)",
            r.runs,
            if r.runs == 1 { "" } else { "s" },
            timeouts(g)
        );
    }
    let alone = match r.no_slow_p99_ms {
        Some(p) => format!(" (alone {} ms)", fixed(p, 3)),
        None => String::new(),
    };
    format!(
        "{label}: p99 {} ms{alone}, {} failed",
        fixed(r.p99_ms_mean, 3),
        r.failed
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::slow::SlowKind;
    use crate::report::summary::summarize;
    use crate::results::config::Configured;
    use crate::results::raw::RawRow;

    /// One measured run of `target` under `slow`: p99 `p99` ms, `ok`
    /// answers, `timeouts` timed-out requests.
    fn run(target: &str, slow: SlowKind, repeat: u64, p99: f64, ok: u64, timeouts: u64) -> RawRow {
        let mut r = RawRow {
            repeat,
            p99_ms: p99,
            complete: ok,
            ok_responses: ok,
            ok_rps: ok as f64,
            failed: timeouts,
            timeouts,
            slow_held_at_end: if slow.is_none() { 0 } else { 2000 },
            ..RawRow::default()
        };
        r.set_run_config(&RunConfig {
            experiment: "e6".into(),
            target: target.into(),
            concurrency: 1,
            keepalive: true,
            slow,
            slow_conns: if slow.is_none() { 0 } else { 2000 },
            ..RunConfig::default()
        });
        r
    }

    #[test]
    fn slow_cells_stand_beside_the_same_client_alone() {
        let (none, header, read) = (SlowKind::None, SlowKind::Header, SlowKind::Read);
        let mut raw = Vec::new();
        for rep in 1..=2 {
            raw.push(run("model:event-loop", none, rep, 0.1, 1000, 0));
            raw.push(run("model:event-loop", header, rep, 0.3, 900, 0));
            raw.push(run("model:iterative", none, rep, 0.2, 800, 0));
            raw.push(run("model:iterative", read, rep, 0.0, 0, 1));
        }
        let s = summarize(&raw);
        let row = |t: &str, a: SlowKind| {
            s.rows
                .iter()
                .find(|r| r.target == t && r.slow == a)
                .unwrap()
        };
        let el = row("model:event-loop", header);
        assert_eq!((el.no_slow_p99_ms, el.no_slow_failed), (Some(0.1), Some(0)));
        assert_eq!(row("model:iterative", read).no_slow_p99_ms, Some(0.2));
        // The none cells pair with nothing.
        assert_eq!(row("model:iterative", none).no_slow_p99_ms, None);
        // Each none cell comes right before its slow cells.
        let order: Vec<SlowKind> = s.rows.iter().map(|r| r.slow).collect();
        assert_eq!(order, [none, header, none, read]);

        let t = table(&s, "e6").expect("a slow-clients table");
        assert_eq!(t.rows.len(), 2, "one line per slow cell");
        assert_eq!(t.rows[0][2], "header x2000");
        assert_eq!(
            (t.rows[0][3].as_str(), t.rows[0][4].as_str()),
            ("0.100", "0.300")
        );
        assert_eq!(t.rows[1][4], "denied");
        assert_eq!(
            (t.rows[1][7].as_str(), t.rows[1][8].as_str()),
            ("2", "2000")
        );

        let said = sentences(&s);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].contains("header x2000: p99 0.300 ms (alone 0.100 ms), 0 failed"));
        assert!(said[1].contains("read x2000: denied, no answer in 2 runs (2 timeouts)"));

        // A sweep with no slow clients has neither.
        let plain: Vec<RawRow> = raw.into_iter().filter(|r| r.slow.is_none()).collect();
        let s = summarize(&plain);
        assert!(table(&s, "e6").is_none() && sentences(&s).is_empty());
    }
}
