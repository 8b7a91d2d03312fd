//! `sweep --compare-to DIR`: the new report compared with an earlier run.
//! One finding names each cell where a change is decided ("event-loop:
//! requests/s 1.12 x [1.06-1.18], better; p99 ~") and counts the rest; the
//! page carries the comparison's table. The earlier run is read each time
//! the report renders, so a re-render still compares.

use std::path::Path;

use super::metrics::{CellResult, Verdict};
use super::model::Metric;
use super::render::{cells_table, ratio_label, target_label, where_label};
use super::{compare, side, Comparison};
use crate::report::findings::{Finding, Kind};
use crate::report::table::Table;

/// What a sweep's findings say of each cell: the metrics a reader of a
/// server's change asks about first.
const SAID: [Metric; 3] = [Metric::Rps, Metric::P99, Metric::CpuPerRequest];

/// The finding and the table comparing `dir` (B, this sweep) with
/// `earlier` (A); an earlier run that cannot be read or has no cell in
/// common is said in the finding, never an error of the report.
pub fn against(earlier: &str, dir: &Path) -> (Finding, Option<Table>) {
    let sides = side::load(&[earlier.into()]).and_then(|a| Ok((a, side::load(&[dir.into()])?)));
    let (a, b) = match sides {
        Ok(s) => s,
        Err(e) => {
            return (
                said(format!(
                    "The earlier run {earlier} could not be compared: {e}."
                )),
                None,
            )
        }
    };
    match compare(&a, &b, false) {
        Ok(c) => {
            let mut t = cells_table(&c);
            t.title = format!("Against the earlier run {earlier} (A: earlier, B: this sweep)");
            (said(sentence(earlier, &c)), Some(t))
        }
        Err(e) => (
            said(format!(
                "The earlier run {earlier} could not be compared: {e}."
            )),
            None,
        ),
    }
}

fn said(text: String) -> Finding {
    Finding {
        kind: Kind::Compare,
        text,
    }
}

/// "Against the earlier run X: cell: requests/s 1.12 x [..], better; p99
/// ~. N other cells: no change beyond its interval."
fn sentence(earlier: &str, c: &Comparison<'_>) -> String {
    let decided: Vec<String> = c.cells.iter().filter_map(|r| cell(r, c)).collect();
    let rest = c.cells.len() - decided.len();
    let mut text =
        format!("Against the earlier run {earlier} (ratios this / earlier, 95 % intervals)");
    if decided.is_empty() {
        text.push_str(&format!(
            ": no change beyond its interval in the {} common cell{}",
            c.cells.len(),
            if c.cells.len() == 1 { "" } else { "s" }
        ));
    } else {
        text.push_str(&format!(": {}", decided.join("; ")));
        if rest > 0 {
            text.push_str(&format!(
                "; {rest} other cell{}: no change beyond its interval",
                if rest == 1 { "" } else { "s" }
            ));
        }
    }
    let lone = c.only_a.len() + c.only_b.len();
    if lone > 0 {
        text.push_str(&format!(
            ". {lone} cell{} ran in only one of the two (see the table)",
            if lone == 1 { "" } else { "s" }
        ));
    }
    text.push('.');
    text
}

/// A cell's clause when one of its metrics changed beyond its interval.
fn cell(r: &CellResult<'_>, c: &Comparison<'_>) -> Option<String> {
    let metrics: Vec<_> = r
        .metrics
        .iter()
        .filter(|m| SAID.contains(&m.metric))
        .collect();
    if !metrics
        .iter()
        .any(|m| matches!(m.verdict, Verdict::Better | Verdict::Worse))
    {
        return None;
    }
    let parts: Vec<String> = metrics
        .iter()
        .map(|m| match m.verdict {
            Verdict::Better | Verdict::Worse => format!(
                "{} {}, {}",
                m.metric.label(),
                ratio_label(m.ratio),
                m.verdict.word()
            ),
            v => format!("{} {}", m.metric.label(), v.word()),
        })
        .collect();
    let place = where_label(&r.pair, &c.shown);
    let name = target_label(&r.pair);
    let who = if place.is_empty() {
        name
    } else {
        format!("{name} ({place})")
    };
    Some(format!("{who}: {}", parts.join(", ")))
}
