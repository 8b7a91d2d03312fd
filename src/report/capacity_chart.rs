//! The capacity search drawn: p99 latency against offered rate from
//! capacity.json's probes, one small multiple per target (ten lines on
//! one panel pile up), each with the objective drawn across it, on a grid
//! as wide as the page; a hollow marker is a rate that failed (failed
//! requests, rate-short or the objective missed). Then the capacities
//! found, as bars with their intervals, bounds drawn as bounds.

use super::axis::spans;
use super::bars::{self, Bar, BarPanel, BarSpec, Bound};
use super::charts::Chart;
use super::plot::{self, ChartSpec, Panel, Point, Series};
use crate::results::capacity::{Capacity, CapacityFile, Outcome};

/// The chart's file under charts/.
pub const FILE: &str = "capacity-p99.svg";
/// The capacity bars' file under charts/.
pub const BARS_FILE: &str = "capacity.svg";
/// Panels per row: five fill the page at the plot's panel width.
const COLUMNS: usize = 5;
/// The palette's grey, for the objective.
const GREY: usize = 7;

/// One point per rate tried: the mean latency of its probes, hollow when
/// any of them failed.
fn points(c: &Capacity, percentile: f64) -> Vec<Point> {
    let mut rates: Vec<f64> = c.probes.iter().map(|p| p.rate).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    rates
        .into_iter()
        .map(|rate| {
            let at: Vec<_> = c.probes.iter().filter(|p| p.rate == rate).collect();
            let mean = at.iter().map(|p| p.latency_ms).sum::<f64>() / at.len() as f64;
            let failed: Vec<&str> = at
                .iter()
                .filter(|p| !p.passed)
                .map(|p| p.why.as_str())
                .collect();
            let mut tip = format!(
                "{}, {rate:.0} requests/s offered: p{percentile} {mean:.3} ms ({} probe{})",
                c.target,
                at.len(),
                if at.len() == 1 { "" } else { "s" }
            );
            if !failed.is_empty() {
                tip.push_str(&format!("; failed: {}", failed.join("; ")));
            }
            Point {
                x: rate,
                y: Some(mean).filter(|m| *m > 0.0),
                ci: None,
                ok: failed.is_empty(),
                tip,
            }
        })
        .collect()
}

/// The chart, or None when no probe was made. `colors` is the page's
/// target order, so each target keeps its colour.
pub fn chart(f: &CapacityFile, colors: &[String]) -> Option<Chart> {
    let o = &f.objective;
    let panels: Vec<Panel> = f
        .results
        .iter()
        .filter(|c| !c.probes.is_empty())
        .map(|c| {
            let pts = points(c, o.percentile);
            let (lo, hi) = (pts[0].x, pts[pts.len() - 1].x);
            let line = |x: f64| Point {
                x,
                y: Some(o.limit_ms),
                ci: None,
                ok: true,
                tip: format!("objective: {}", o.text()),
            };
            Panel {
                // The target alone: a panel is narrow, and its capacity is
                // in the table above.
                title: if c.keepalive {
                    c.target.clone()
                } else {
                    format!("{}, keep-alive off", c.target)
                },
                series: vec![
                    Series {
                        label: c.target.clone(),
                        color: colors.iter().position(|t| *t == c.target).unwrap_or(0),
                        variant: 0,
                        points: pts,
                    },
                    Series {
                        label: format!("objective ({})", o.text()),
                        color: GREY,
                        variant: 1,
                        points: vec![line(lo), line(hi)],
                    },
                ],
            }
        })
        .collect();
    if panels.is_empty() {
        return None;
    }
    let spec = ChartSpec {
        title: format!(
            "p{} latency against offered rate, capacity search ({} s probes)",
            o.percentile, f.run_s
        ),
        x_label: "offered rate (requests/s)".into(),
        y_label: format!("p{} latency (ms)", o.percentile),
        log_x: true,
        log_y: true,
        integer_x: false,
        columns: COLUMNS.min(panels.len()),
        panels,
    };
    Some(Chart {
        experiment: String::new(),
        file: FILE.into(),
        title: spec.title.clone(),
        svg: plot::svg(&spec),
    })
}

/// The capacities as bars, one panel per setting, or None without
/// results. A bound is drawn open with its arrow: never as a capacity.
pub fn bars_chart(f: &CapacityFile, colors: &[String]) -> Option<Chart> {
    let panels: Vec<BarPanel> = f
        .settings()
        .into_iter()
        .map(|s| BarPanel {
            bars: f
                .results
                .iter()
                .filter(|c| c.setting() == s)
                .map(|c| Bar {
                    label: c.target.clone(),
                    value: c.rate,
                    ci: c.ci95_low.zip(c.ci95_high),
                    bound: match c.outcome {
                        Outcome::Capacity => Bound::Value,
                        Outcome::ClientLimit | Outcome::Above => Bound::AtLeast,
                        Outcome::Below => Bound::Below,
                    },
                    color: colors.iter().position(|t| *t == c.target).unwrap_or(0),
                    text: c.text(),
                    tip: format!("{}, {s}: {} requests/s", c.target, c.text()),
                })
                .collect(),
            title: s,
        })
        .collect();
    if panels.is_empty() {
        return None;
    }
    let spec = BarSpec {
        title: format!("Capacity within {} (requests/s)", f.objective.text()),
        x_label: "highest offered rate served (requests/s)".into(),
        log: spans(f.results.iter().map(|c| c.rate), 10.0),
        panels,
    };
    Some(Chart {
        experiment: String::new(),
        file: BARS_FILE.into(),
        title: spec.title.clone(),
        svg: bars::svg(&spec),
    })
}
