//! Which charts the report has and what is on them: per experiment (and
//! per path when there are several), one chart per metric against
//! concurrency, one panel per keep-alive setting, one line per target
//! (split by workers, cpus or load when those vary). Each target keeps one
//! colour in every chart of the page. Drawing is left to `plot`.

use super::axis::{wants_log_x, wants_log_y};
use super::plot::{self, ChartSpec, Panel, Point, Series};
use super::summary::{Group, SweepSummary, Varies};
use super::sweep_tables::{of_experiment, on_off, slug};
use crate::results::config::{Configured, RunConfig};
use crate::results::raw::RawRow;
use crate::stats::Interval;

/// A rendered chart: its file under charts/ and its SVG text.
#[derive(Debug, Clone)]
pub struct Chart {
    /// The experiment whose section shows it.
    pub experiment: String,
    pub file: String,
    pub title: String,
    pub svg: String,
}

struct Metric {
    slug: &'static str,
    name: &'static str,
    y_label: &'static str,
    unit: &'static str,
    decimals: usize,
    /// The figure of one run, `None` when the run has none (resources of
    /// a `url:` target, which loadlab does not watch).
    value: fn(&RawRow) -> Option<f64>,
}

/// Resource figures exist only for targets loadlab watched (not `url:`):
/// a peak RSS of zero means nothing was sampled, not an idle server.
fn watched(r: &RawRow) -> bool {
    r.server_rss_peak_kb > 0
}

const METRICS: [Metric; 5] = [
    Metric {
        slug: "rps",
        name: "requests/s",
        y_label: "answered 2xx/3xx per second",
        unit: "req/s",
        decimals: 0,
        value: |r| Some(r.ok_rps),
    },
    Metric {
        slug: "p50",
        name: "p50 latency",
        y_label: "p50 latency (ms)",
        unit: "ms",
        decimals: 3,
        value: |r| Some(r.p50_ms),
    },
    Metric {
        slug: "p99",
        name: "p99 latency",
        y_label: "p99 latency (ms)",
        unit: "ms",
        decimals: 3,
        value: |r| Some(r.p99_ms),
    },
    Metric {
        slug: "cpu-per-request",
        name: "server CPU per request",
        y_label: "server CPU per request (µs)",
        unit: "µs",
        decimals: 1,
        value: |r| {
            (watched(r) && r.ok_responses > 0)
                .then(|| r.server_cpu_ms * 1000.0 / r.ok_responses as f64)
        },
    },
    Metric {
        slug: "rss",
        name: "server memory",
        y_label: "server peak RSS (MiB)",
        unit: "MiB",
        decimals: 1,
        value: |r| watched(r).then(|| r.server_rss_peak_kb as f64 / 1024.0),
    },
];

/// The dimension on the x axis. Concurrency, unless it is fixed and the
/// worker count is what varies (E4), where a line over one point would say
/// nothing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum XDim {
    Concurrency,
    Workers,
}

impl XDim {
    fn of(k: &RunConfig, x: XDim) -> f64 {
        match x {
            XDim::Concurrency => k.concurrency as f64,
            XDim::Workers => k.workers as f64,
        }
    }
}

/// Targets in the order the data first names them: a target's index is
/// its colour on every chart of the page.
pub fn target_order(s: &SweepSummary) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    let names = s
        .groups
        .iter()
        .map(|g| &g.key.target)
        .chain(s.failed.iter().map(|f| &f.target));
    for t in names {
        if !order.contains(t) {
            order.push(t.clone());
        }
    }
    order
}

/// A configuration on a chart: measured (a group) or failed in every run.
enum Cell<'a> {
    Measured(&'a Group),
    Failed(RunConfig, &'a str),
}

impl Cell<'_> {
    fn key(&self) -> &RunConfig {
        match self {
            Cell::Measured(g) => &g.key,
            Cell::Failed(k, _) => k,
        }
    }
}

/// Every chart of the report, in report order.
pub fn all(s: &SweepSummary) -> anyhow::Result<Vec<Chart>> {
    let colors = target_order(s);
    let mut charts = Vec::new();
    let mut used = std::collections::HashSet::new();
    for exp in &s.experiments {
        let mut cells: Vec<Cell> = of_experiment(s, exp)
            .into_iter()
            .map(|(g, _)| Cell::Measured(g))
            .collect();
        // Configurations whose every run failed have no group; they are
        // drawn as hollow markers so the chart does not hide them.
        for f in s
            .failed
            .iter()
            // A target that never started failed as a whole (no path, no
            // concurrency): it is in the failed-runs table, not on a chart.
            .filter(|f| f.experiment == *exp && !f.warmup && f.concurrency > 0)
        {
            let k = f.run_config();
            if !cells.iter().any(|c| *c.key() == k) {
                cells.push(Cell::Failed(k, &f.error));
            }
        }
        let mut paths: Vec<&str> = Vec::new();
        for c in &cells {
            if !paths.contains(&c.key().path.as_str()) {
                paths.push(&c.key().path);
            }
        }
        for path in &paths {
            let set: Vec<&Cell> = cells.iter().filter(|c| c.key().path == *path).collect();
            let split = paths.len() > 1;
            let stem = if split {
                format!("{}-{}", slug(exp), slug(path))
            } else {
                slug(exp)
            };
            for m in &METRICS {
                let Some(spec) = spec(exp, split.then_some(*path), m, &set, &colors) else {
                    continue;
                };
                let mut file = format!("{stem}-{}.svg", m.slug);
                let mut n = 2;
                while !used.insert(file.clone()) {
                    file = format!("{stem}-{}-{n}.svg", m.slug);
                    n += 1;
                }
                charts.push(Chart {
                    experiment: exp.clone(),
                    file,
                    title: spec.title.clone(),
                    svg: plot::svg(&spec),
                });
            }
        }
    }
    Ok(charts)
}

/// The marker of one configuration: mean with its interval and the exact
/// figures as a tooltip, or `None` when no run has a value for `m`.
fn point(c: &Cell, m: &Metric, label: &str, x_name: &str, xv: f64) -> Option<Point> {
    let head = format!("{label}, {x_name} {xv}");
    match c {
        Cell::Failed(_, why) => Some(Point {
            x: xv,
            y: None,
            ci: None,
            ok: false,
            tip: format!("{head}: every run failed: {why}"),
        }),
        Cell::Measured(g) => {
            let v: Vec<f64> = g.runs.iter().filter_map(m.value).collect();
            if v.is_empty() {
                return None;
            }
            let i = Interval::of(&v);
            let failed: u64 = g.runs.iter().map(|r| r.failed).sum();
            let non_2xx: u64 = g.runs.iter().map(|r| r.non_2xx).sum();
            let no_answer = g.runs.iter().all(|r| r.ok_responses == 0);
            let ok = failed == 0 && non_2xx == 0 && g.error_runs == 0 && !no_answer;
            let d = m.decimals;
            let mut tip = if i.half.is_finite() && i.n > 1 {
                format!(
                    "{head}: {:.d$} ± {:.d$} {} (95 % CI, {} runs)",
                    i.mean, i.half, m.unit, i.n
                )
            } else {
                format!("{head}: {:.d$} {} (1 run, no interval)", i.mean, m.unit)
            };
            if !ok {
                tip.push_str(&format!(
                    "; {failed} failed, {non_2xx} non-2xx, {} runs that could not be made",
                    g.error_runs
                ));
            }
            Some(Point {
                x: xv,
                // A cell with no good answer has no throughput to place:
                // it sits on the axis, hollow, rather than pin a log axis.
                y: Some(i.mean).filter(|y| y.is_finite() && (ok || *y > 0.0)),
                ci: (i.n > 1 && i.half.is_finite()).then(|| (i.low(), i.high())),
                ok,
                tip,
            })
        }
    }
}

/// The chart of one metric over one set of configurations, or `None`
/// when no configuration has a value for it.
fn spec(
    exp: &str,
    path: Option<&str>,
    m: &Metric,
    set: &[&Cell],
    colors: &[String],
) -> Option<ChartSpec> {
    let v = Varies::of(set.iter().map(|c| c.key()));
    let x = if !v.concurrency && v.workers {
        XDim::Workers
    } else {
        XDim::Concurrency
    };
    let x_name = match x {
        XDim::Concurrency => "concurrency",
        XDim::Workers => "workers",
    };
    // Workers and cpus name a line only when one target has several of
    // them; a count that merely differs between targets (each model's
    // default pool) is in the table, not in every legend entry.
    let within = set.iter().fold(Varies::default(), |acc, c| {
        let v = Varies::of(
            set.iter()
                .map(|d| d.key())
                .filter(|k| k.target == c.key().target),
        );
        Varies {
            workers: acc.workers || v.workers,
            cpus: acc.cpus || v.cpus,
            ..acc
        }
    });

    // One panel per keep-alive setting, off first (the summary's order).
    let settings: Vec<bool> = if v.keepalive {
        vec![false, true]
    } else {
        set.first().map(|c| c.key().keepalive).into_iter().collect()
    };
    let mut panels = Vec::new();
    for ka in settings {
        let mut series: Vec<Series> = Vec::new();
        // Lines of one target are told apart by dash and marker shape.
        let mut variants: Vec<(String, String)> = Vec::new();
        for c in set.iter().filter(|c| c.key().keepalive == ka) {
            let k = c.key();
            let mut q = String::new();
            if within.workers && x != XDim::Workers {
                q.push_str(&format!(" workers={}", k.workers));
            }
            if within.cpus {
                q.push_str(&format!(" cpus={}", k.cpus));
            }
            if v.load {
                q.push_str(&format!(" {}", k.load_label()));
            }
            if v.slow {
                q.push_str(&format!(" slow={}", k.slow.label(k.slow_conns)));
            }
            let label = format!("{}{q}", k.target);
            let xv = XDim::of(k, x);
            let Some(p) = point(c, m, &label, x_name, xv) else {
                continue;
            };
            match series.iter_mut().find(|s| s.label == label) {
                Some(s) => s.points.push(p),
                None => {
                    let variant = variants
                        .iter()
                        .filter(|(t, _)| *t == k.target)
                        .position(|(_, qq)| *qq == q)
                        .unwrap_or_else(|| {
                            variants.push((k.target.clone(), q.clone()));
                            variants.iter().filter(|(t, _)| *t == k.target).count() - 1
                        });
                    series.push(Series {
                        label,
                        color: colors.iter().position(|t| *t == k.target).unwrap_or(0),
                        variant,
                        points: vec![p],
                    });
                }
            }
        }
        for s in &mut series {
            s.points.sort_by(|a, b| a.x.total_cmp(&b.x));
        }
        if !series.is_empty() {
            panels.push(Panel {
                title: format!("keep-alive {}", on_off(ka)),
                series,
            });
        }
    }
    if panels.is_empty()
        || !panels.iter().any(|p| {
            p.series
                .iter()
                .any(|s| s.points.iter().any(|p| p.y.is_some()))
        })
    {
        return None;
    }

    let all = || {
        panels
            .iter()
            .flat_map(|p| p.series.iter())
            .flat_map(|s| s.points.iter())
    };
    let log_x = x == XDim::Concurrency && wants_log_x(all().map(|p| p.x));
    let ys: Vec<f64> = all().filter_map(|p| p.y).collect();
    let log_y = wants_log_y(&ys);
    let scale = |label: &str, log: bool| {
        if log {
            format!("{label} (log scale)")
        } else {
            label.to_string()
        }
    };
    let mut title = format!("{exp}: {} vs {x_name}", m.name);
    if let Some(p) = path {
        title.push_str(&format!(" ({p})"));
    }
    Some(ChartSpec {
        title,
        x_label: scale(x_name, log_x),
        y_label: scale(m.y_label, log_y),
        log_x,
        log_y,
        integer_x: true,
        columns: panels.len(),
        panels,
    })
}
