//! The comparison as JSON (`--format json`), its shape pinned by
//! docs/schema/compare-v1.schema.json and a test that holds the output to
//! it.

use serde::Serialize;

use super::metrics::{CellResult, Figure, MetricResult};
use super::model::{Cell, Side};
use super::Comparison;
use crate::results::raw::Machine;
use crate::stats::Ratio;

/// Names the document's shape; bumped when a field changes meaning.
pub const SCHEMA: &str = "loadlab.compare/1";

#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    loadlab_version: &'static str,
    a: SideJson<'a>,
    b: SideJson<'a>,
    header: &'a [String],
    warnings: &'a [String],
    cells: Vec<CellJson<'a>>,
    only_a: Vec<CellRef<'a>>,
    only_b: Vec<CellRef<'a>>,
    refused: Vec<[CellRef<'a>; 2]>,
}

#[derive(Serialize)]
struct SideJson<'a> {
    source: &'a str,
    kind: &'static str,
    loadlab_version: Option<&'a str>,
    machine: Option<&'a Machine>,
    cpu_split: &'a [String],
    host: &'a [String],
}

#[derive(Serialize)]
struct CellRef<'a> {
    target: &'a str,
    /// The cell's dimensions by name (path, c, rate, keepalive...).
    dims: serde_json::Map<String, serde_json::Value>,
    load: &'a str,
    runs: usize,
}

#[derive(Serialize)]
struct CellJson<'a> {
    a: CellRef<'a>,
    b: CellRef<'a>,
    load_differs: bool,
    metrics: Vec<MetricJson>,
    failed_a: u64,
    failed_b: u64,
    failed_verdict: &'static str,
}

#[derive(Serialize)]
struct MetricJson {
    metric: &'static str,
    label: &'static str,
    higher_is_better: bool,
    a_mean: Option<f64>,
    a_runs: usize,
    b_mean: Option<f64>,
    b_runs: usize,
    ratio: Option<RatioJson>,
    double_ratio: Option<RatioJson>,
    verdict: &'static str,
}

#[derive(Serialize)]
struct RatioJson {
    estimate: f64,
    ci95_low: Option<f64>,
    ci95_high: Option<f64>,
}

impl From<Ratio> for RatioJson {
    fn from(r: Ratio) -> RatioJson {
        RatioJson {
            estimate: r.estimate,
            ci95_low: r.ci95.map(|c| c.0),
            ci95_high: r.ci95.map(|c| c.1),
        }
    }
}

fn side(s: &Side) -> SideJson<'_> {
    SideJson {
        source: &s.source,
        kind: s.kind.word(),
        loadlab_version: s.version.as_deref(),
        machine: s.machine.as_ref(),
        cpu_split: &s.cpu_split,
        host: &s.host,
    }
}

fn cell_ref(c: &Cell) -> CellRef<'_> {
    CellRef {
        target: &c.target,
        dims: c
            .dims
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone().into()))
            .collect(),
        load: &c.load,
        runs: c.runs.len(),
    }
}

fn metric(m: &MetricResult) -> MetricJson {
    let mean = |f: Option<Figure>| f.map(|f| f.mean);
    let n = |f: Option<Figure>| f.map_or(0, |f| f.n);
    MetricJson {
        metric: m.metric.name(),
        label: m.metric.label(),
        higher_is_better: m.metric.higher_is_better(),
        a_mean: mean(m.a),
        a_runs: n(m.a),
        b_mean: mean(m.b),
        b_runs: n(m.b),
        ratio: m.ratio.map(Into::into),
        double_ratio: m.double.map(Into::into),
        verdict: m.verdict.word(),
    }
}

fn cell<'a>(c: &CellResult<'a>) -> CellJson<'a> {
    CellJson {
        a: cell_ref(c.pair.a),
        b: cell_ref(c.pair.b),
        load_differs: c.pair.load_differs,
        metrics: c.metrics.iter().map(metric).collect(),
        failed_a: c.failed.a,
        failed_b: c.failed.b,
        failed_verdict: c.failed.verdict.word(),
    }
}

/// The JSON document, pretty-printed, with a final newline.
pub fn json(c: &Comparison<'_>) -> String {
    let doc = Doc {
        schema: SCHEMA,
        loadlab_version: env!("CARGO_PKG_VERSION"),
        a: side(c.a),
        b: side(c.b),
        header: &c.header.lines,
        warnings: &c.header.warnings,
        cells: c.cells.iter().map(cell).collect(),
        only_a: c.only_a.iter().map(|x| cell_ref(x)).collect(),
        only_b: c.only_b.iter().map(|x| cell_ref(x)).collect(),
        refused: c
            .refused
            .iter()
            .map(|p| [cell_ref(p.a), cell_ref(p.b)])
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
