//! The stress page's charts: per operation and file size, throughput per
//! client against the number of clients, one panel per server model and
//! worker count (models in rows, worker counts in columns, one shared y
//! axis), each model in its own colour on every chart. Drawing is left to
//! `plot`.

use super::axis::{wants_log_x, wants_log_y};
use super::charts::Chart;
use super::plot::{self, ChartSpec, Panel, Point, Series};
use crate::results::stress::{size_label, Op, StressRow};

fn first_seen<T: PartialEq + Clone>(v: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

fn tip(r: &StressRow) -> String {
    let server = match r.server_workers {
        Some(w) => format!("{} with {w} workers", r.model),
        None => "external server".to_string(),
    };
    let mut t = format!(
        "{} {}, {server}, {} clients: {:.1} MB/s per client, {:.1} MB/s aggregate, {} of {} verified",
        r.op,
        size_label(r.size),
        r.clients,
        r.per_client_bps / 1e6,
        r.aggregate_bps / 1e6,
        r.verified,
        r.clients
    );
    if !r.error.is_empty() {
        t.push_str(&format!("; first error: {}", r.error));
    }
    t
}

/// Every chart of the stress page, operations then sizes ascending.
pub fn all(rows: &[StressRow]) -> Vec<Chart> {
    let models: Vec<&str> = first_seen(rows.iter().map(|r| r.model.as_str()));
    let mut workers: Vec<Option<usize>> = first_seen(rows.iter().map(|r| r.server_workers));
    workers.sort();
    let mut cases: Vec<(Op, u64)> = first_seen(rows.iter().map(|r| (r.op, r.size)));
    cases.sort();
    let mut charts = Vec::new();
    for (op, size) in cases {
        let mut panels = Vec::new();
        for (color, model) in models.iter().enumerate() {
            for w in &workers {
                let mut cells: Vec<&StressRow> = rows
                    .iter()
                    .filter(|r| {
                        (r.op, r.size, r.model.as_str(), r.server_workers) == (op, size, model, *w)
                    })
                    .collect();
                if cells.is_empty() {
                    continue;
                }
                cells.sort_by_key(|r| r.clients);
                let points = cells
                    .iter()
                    .map(|r| Point {
                        x: r.clients as f64,
                        // No verified transfer: no throughput to place.
                        y: (r.succeeded > 0).then_some(r.per_client_bps / 1e6),
                        ci: None,
                        ok: r.failed == 0,
                        tip: tip(r),
                    })
                    .collect();
                let title = match w {
                    Some(1) => format!("{model}, 1 worker"),
                    Some(n) => format!("{model}, {n} workers"),
                    None => model.to_string(),
                };
                panels.push(Panel {
                    title,
                    series: vec![Series {
                        label: model.to_string(),
                        color,
                        variant: 0,
                        points,
                    }],
                });
            }
        }
        let pts = || panels.iter().flat_map(|p| p.series[0].points.iter());
        let log_x = wants_log_x(pts().map(|p| p.x));
        let ys: Vec<f64> = pts().filter_map(|p| p.y).collect();
        let log_y = wants_log_y(&ys);
        let title = format!(
            "{op} {}: throughput per client vs clients",
            size_label(size)
        );
        let spec = ChartSpec {
            title: title.clone(),
            x_label: if log_x {
                "clients (log scale)"
            } else {
                "clients"
            }
            .into(),
            y_label: format!(
                "throughput per client (MB/s){}",
                if log_y { ", log scale" } else { "" }
            ),
            log_x,
            log_y,
            integer_x: true,
            columns: workers.len(),
            panels,
        };
        charts.push(Chart {
            experiment: "e2".into(),
            file: format!("stress-{op}-{}.svg", size_label(size)),
            title,
            svg: plot::svg(&spec),
        });
    }
    charts
}
