//! `loadlab compare`: two runs side by side, each difference with its
//! interval. Reads each side (`side`, `side_files`), pairs the cells they
//! have in common (`matching`), compares each metric (`metrics`), says
//! first what differs beyond the server (`header`), renders the result
//! (`render`, `json`, `html`) and checks the CI gates (`gate`); a sweep's
//! report compares itself with an earlier run (`in_sweep`).

pub mod gate;
pub mod header;
pub mod html;
pub mod in_sweep;
pub mod json;
pub mod matching;
pub mod metrics;
pub mod model;
pub mod render;
pub mod side;
pub mod side_files;

use header::Header;
use matching::{match_cells, Pair};
use metrics::{compare_pair, CellResult};
use model::{Cell, Side};

use super::InputError;

/// Everything a comparison found.
#[derive(Debug, Clone)]
pub struct Comparison<'a> {
    pub a: &'a Side,
    pub b: &'a Side,
    pub header: Header,
    /// Compared cells (with --force, those whose load differs too).
    pub cells: Vec<CellResult<'a>>,
    /// Cells whose load settings differ, not compared.
    pub refused: Vec<Pair<'a>>,
    pub only_a: Vec<&'a Cell>,
    pub only_b: Vec<&'a Cell>,
    /// The dimensions whose value differs between cells: the tables show
    /// these, the header the others.
    pub shown: Vec<&'static str>,
}

/// Compares `b` with `a`. No cell in common (or only cells whose load
/// differs, unforced) is the caller's mistake.
pub fn compare<'a>(a: &'a Side, b: &'a Side, force: bool) -> Result<Comparison<'a>, InputError> {
    let m = match_cells(a, b);
    if m.pairs.is_empty() {
        return Err(InputError::Unreadable(format!(
            "{} and {} have no cell in common (targets A: {}; B: {})",
            a.source,
            b.source,
            a.targets().join(", "),
            b.targets().join(", ")
        )));
    }
    let mut header = header::header(a, b, &m, force);
    let (shown, fixed) = split_dims(a, b);
    if !fixed.is_empty() {
        header.lines.push(format!("every cell: {fixed}"));
    }
    let (kept, refused): (Vec<Pair>, Vec<Pair>) =
        m.pairs.iter().partition(|p| force || !p.load_differs);
    if kept.is_empty() {
        return Err(InputError::Unreadable(format!(
            "every cell in common ran another load in {} than in {} ({} against {}); --force compares them anyway",
            b.source, a.source, refused[0].b.load, refused[0].a.load
        )));
    }
    Ok(Comparison {
        a,
        b,
        header,
        cells: kept.into_iter().map(compare_pair).collect(),
        refused,
        only_a: m.only_a,
        only_b: m.only_b,
        shown,
    })
}

/// The dimensions that vary among all cells of both sides, and the
/// others' values in words.
fn split_dims(a: &Side, b: &Side) -> (Vec<&'static str>, String) {
    let cells: Vec<&Cell> = a.cells.iter().chain(&b.cells).collect();
    let mut shown = Vec::new();
    let mut fixed = Vec::new();
    for (k, v) in cells.first().map(|c| c.dims.clone()).unwrap_or_default() {
        let same = cells
            .iter()
            .all(|c| c.dims.iter().any(|(k2, v2)| *k2 == k && *v2 == v));
        match (same, v.is_empty()) {
            (false, _) => shown.push(k),
            (true, false) => fixed.push(format!("{k}={v}")),
            (true, true) => {}
        }
    }
    (shown, fixed.join(" "))
}
