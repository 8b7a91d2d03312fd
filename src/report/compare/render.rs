//! The comparison as text for a terminal and as Markdown for a pull
//! request: the header first, then one row per metric of each common
//! cell, then the cells only one side has and those refused. Both views
//! come from the same tables (`report::table`), so they never disagree.

use super::matching::Pair;
use super::metrics::{CellResult, Figure};
use super::model::Cell;
use super::Comparison;
use crate::report::num::fixed;
use crate::report::table::{Align, Table};
use crate::stats::Ratio;

/// "1.12 x [1.06-1.18]", or "1.12 x" without an interval.
pub fn ratio_label(r: Option<Ratio>) -> String {
    match r {
        Some(Ratio {
            estimate,
            ci95: Some((lo, hi)),
            ..
        }) => format!(
            "{} x [{}-{}]",
            fixed(estimate, 2),
            fixed(lo, 2),
            fixed(hi, 2)
        ),
        Some(r) => format!("{} x", fixed(r.estimate, 2)),
        None => "–".into(),
    }
}

/// The target(s) of a pair: one name, or "A → B" when they differ.
pub fn target_label(p: &Pair<'_>) -> String {
    if p.a.target == p.b.target {
        p.a.target.clone()
    } else {
        format!("{} → {}", p.a.target, p.b.target)
    }
}

/// A pair's dimensions, marked when its loads differ.
pub fn where_label(p: &Pair<'_>, shown: &[&str]) -> String {
    let w = p.a.where_label(shown);
    if p.load_differs {
        format!("{w} [load differs: {} / {}]", p.a.load, p.b.load)
    } else {
        w
    }
}

fn figure(f: Option<Figure>, decimals: usize) -> String {
    match f {
        Some(f) if f.n > 1 => format!("{} ({} runs)", fixed(f.mean, decimals), f.n),
        Some(f) => format!("{} (1 run)", fixed(f.mean, decimals)),
        None => "–".into(),
    }
}

/// One row per metric, and the failed counts, of every compared cell.
pub fn cells_table(c: &Comparison<'_>) -> Table {
    let mut t = Table::new(
        "compare",
        "B against A",
        &[
            ("target", Align::Left),
            ("cell", Align::Left),
            ("metric", Align::Left),
            ("A", Align::Right),
            ("B", Align::Right),
            ("B/A [95 %]", Align::Right),
            ("vs baseline", Align::Right),
            ("verdict", Align::Left),
        ],
    );
    for cell in &c.cells {
        push_cell(&mut t, cell, &c.shown);
    }
    t
}

fn push_cell(t: &mut Table, cell: &CellResult<'_>, shown: &[&str]) {
    let (target, at) = (target_label(&cell.pair), where_label(&cell.pair, shown));
    for m in &cell.metrics {
        let d = m.metric.decimals();
        t.push(vec![
            target.clone(),
            at.clone(),
            m.metric.label().into(),
            figure(m.a, d),
            figure(m.b, d),
            ratio_label(m.ratio),
            m.double.map_or(String::new(), |r| ratio_label(Some(r))),
            m.verdict.word().into(),
        ]);
    }
    let f = cell.failed;
    t.push(vec![
        target,
        at,
        "failed".into(),
        f.a.to_string(),
        f.b.to_string(),
        String::new(),
        String::new(),
        f.verdict.word().into(),
    ]);
}

/// Cells one side has and the other lacks, or refused ones.
fn list_table(id: &str, title: &str, cells: &[(&str, &Cell)], shown: &[&str]) -> Table {
    let mut t = Table::new(
        id,
        title,
        &[
            ("side", Align::Left),
            ("target", Align::Left),
            ("cell", Align::Left),
            ("load", Align::Left),
        ],
    );
    for (side, c) in cells {
        t.push(vec![
            side.to_string(),
            c.target.clone(),
            c.where_label(shown),
            c.load.clone(),
        ]);
    }
    t
}

/// The tables after the main one: one side only, refused.
pub fn other_tables(c: &Comparison<'_>) -> Vec<Table> {
    let mut out = Vec::new();
    let only: Vec<(&str, &Cell)> = c
        .only_a
        .iter()
        .map(|x| ("A only", *x))
        .chain(c.only_b.iter().map(|x| ("B only", *x)))
        .collect();
    if !only.is_empty() {
        out.push(list_table(
            "one-side",
            "Cells on one side only",
            &only,
            &c.shown,
        ));
    }
    let refused: Vec<(&str, &Cell)> = c
        .refused
        .iter()
        .flat_map(|p| [("A", p.a), ("B", p.b)])
        .collect();
    if !refused.is_empty() {
        out.push(list_table(
            "refused",
            "Refused: load settings differ (--force compares them)",
            &refused,
            &c.shown,
        ));
    }
    out
}

/// The terminal text: header lines, warnings, tables.
pub fn text(c: &Comparison<'_>) -> String {
    let mut s = String::new();
    for l in &c.header.lines {
        s.push_str(&format!("{l}\n"));
    }
    for w in &c.header.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s.push('\n');
    s.push_str(&cells_table(c).to_terminal());
    for t in other_tables(c) {
        s.push_str(&format!("\n{}\n", t.title));
        s.push_str(&t.to_terminal());
    }
    s
}

/// A Markdown document for a pull-request comment.
pub fn markdown(c: &Comparison<'_>) -> String {
    let mut s = String::from("## loadlab compare\n\n");
    for l in &c.header.lines {
        s.push_str(&format!("- {l}\n"));
    }
    for w in &c.header.warnings {
        s.push_str(&format!("- **warning:** {w}\n"));
    }
    s.push('\n');
    s.push_str(&cells_table(c).to_markdown(3));
    for t in other_tables(c) {
        s.push('\n');
        s.push_str(&t.to_markdown(3));
    }
    s
}
