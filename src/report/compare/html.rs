//! The comparison as one self-contained page (`--html FILE`): the header,
//! the tables, and the report's charts with both runs' curves overlaid,
//! A solid and B dashed, one panel per target and cell shape. No
//! scripts; the file is written whole.

use std::path::Path;

use super::model::{Cell, Metric};
use super::render::{cells_table, other_tables};
use super::Comparison;
use crate::report::charts::Chart;
use crate::report::page::{charts_html, head, table_html};
use crate::report::plot::{self, ChartSpec, Panel, Point, Series};
use crate::report::table::esc;
use crate::results::whole::write_whole;
use crate::stats::Interval;

/// Metrics drawn, when measured.
const DRAWN: [Metric; 4] = [
    Metric::Rps,
    Metric::P99,
    Metric::CpuPerRequest,
    Metric::AggregateMbps,
];

/// The x a cell is drawn at: its offered rate, else its concurrency (or
/// stress clients); None for a cell with neither.
fn x_of(c: &Cell) -> Option<(&'static str, f64)> {
    let dim = |k: &str| c.dims.iter().find(|(n, _)| *n == k);
    ["rate", "c", "clients"].into_iter().find_map(|k| {
        let (name, v) = dim(k)?;
        v.parse().ok().map(|x| (*name, x))
    })
}

/// A cell's panel: its target and every dimension but the x.
fn panel_of(c: &Cell, x: &str) -> String {
    let rest: Vec<String> = c
        .dims
        .iter()
        .filter(|(k, v)| *k != x && !v.is_empty() && !(x == "rate" && *k == "c"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("{} {}", c.target, rest.join(" "))
}

fn point(c: &Cell, x: f64, m: Metric) -> Option<Point> {
    let i = Interval::of(&c.values(m));
    (i.n > 0).then(|| Point {
        x,
        y: Some(i.mean),
        ci: i.ci95(),
        ok: c.failed == 0,
        tip: format!("{} runs, mean {:.3}", i.n, i.mean),
    })
}

/// One chart of `m`: a panel per A-side panel name, A and B as two series.
fn chart(c: &Comparison<'_>, m: Metric) -> Option<Chart> {
    let mut panels: Vec<Panel> = Vec::new();
    let mut x_name = "";
    for cell in &c.cells {
        let Some((xn, x)) = x_of(cell.pair.a) else {
            continue;
        };
        x_name = xn;
        let title = panel_of(cell.pair.a, xn);
        let i = match panels.iter().position(|p| p.title == title) {
            Some(i) => i,
            None => {
                let series = |label: &str, n: usize| Series {
                    label: label.into(),
                    color: n,
                    variant: n,
                    points: Vec::new(),
                };
                panels.push(Panel {
                    title,
                    series: vec![series("A", 0), series("B", 1)],
                });
                panels.len() - 1
            }
        };
        for (s, side) in [cell.pair.a, cell.pair.b].into_iter().enumerate() {
            panels[i].series[s].points.extend(point(side, x, m));
        }
    }
    panels.retain(|p| p.series.iter().any(|s| !s.points.is_empty()));
    if panels.is_empty() {
        return None;
    }
    for p in &mut panels {
        for s in &mut p.series {
            s.points.sort_by(|a, b| a.x.total_cmp(&b.x));
        }
    }
    let spec = ChartSpec {
        title: format!("{}: A (solid) and B (dashed)", m.label()),
        x_label: x_name.into(),
        y_label: m.label().into(),
        log_x: false,
        log_y: false,
        integer_x: x_name != "rate",
        columns: 2,
        panels,
    };
    Some(Chart {
        experiment: String::new(),
        file: format!("compare-{}.svg", m.name()),
        title: spec.title.clone(),
        svg: plot::svg(&spec),
    })
}

/// The page's text.
pub fn page(c: &Comparison<'_>) -> String {
    let mut o = head("loadlab compare");
    o.push_str("<h1>loadlab compare</h1>\n<section id=\"header\">\n<ul>\n");
    for l in &c.header.lines {
        o.push_str(&format!("<li>{}</li>\n", esc(l)));
    }
    for w in &c.header.warnings {
        o.push_str(&format!("<li><b>warning:</b> {}</li>\n", esc(w)));
    }
    o.push_str("</ul>\n</section>\n");
    o.push_str(&table_html(&cells_table(c), 2));
    for t in other_tables(c) {
        o.push_str(&table_html(&t, 2));
    }
    let charts: Vec<Chart> = DRAWN.into_iter().filter_map(|m| chart(c, m)).collect();
    o.push_str(&charts_html(&charts.iter().collect::<Vec<_>>()));
    o.push_str("</body>\n</html>\n");
    o
}

/// Writes the page to `file` whole.
pub fn write(c: &Comparison<'_>, file: &Path) -> anyhow::Result<()> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| anyhow::anyhow!("--html {}: not a file name", file.display()))?;
    write_whole(dir, name, page(c).as_bytes())?;
    Ok(())
}
