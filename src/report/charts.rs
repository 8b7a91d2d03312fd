//! Which charts the report has and what is on them: per experiment (and
//! per path when there are several), one chart per metric against
//! concurrency, one line per target (split by keep-alive, workers, cpus or
//! load when those vary). Drawing is left to `plot`.

use super::plot::{self, ChartSpec, Series};
use super::summary::{Group, SummaryRow, SweepSummary, Varies};
use super::sweep_tables::{of_experiment, on_off, slug};

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
    /// Latencies may go on a log axis; throughput and resources compare
    /// better from zero.
    may_log: bool,
    value: fn(&SummaryRow) -> Option<f64>,
}

/// Resource figures exist only for targets loadlab watched (not `url:`):
/// a peak RSS of zero means nothing was sampled, not an idle server.
fn watched(r: &SummaryRow) -> bool {
    r.server_rss_peak_kb_mean > 0.0
}

const METRICS: [Metric; 5] = [
    Metric {
        slug: "rps",
        may_log: false,
        name: "requests/s",
        y_label: "requests/s (mean over runs)",
        value: |r| Some(r.requests_per_second_mean),
    },
    Metric {
        slug: "p50",
        may_log: true,
        name: "p50 latency",
        y_label: "p50 latency (ms)",
        value: |r| Some(r.p50_ms_mean),
    },
    Metric {
        slug: "p99",
        may_log: true,
        name: "p99 latency",
        y_label: "p99 latency (ms)",
        value: |r| Some(r.p99_ms_mean),
    },
    Metric {
        slug: "cpu",
        may_log: false,
        name: "server CPU",
        y_label: "server CPU % (100 = one core)",
        value: |r| watched(r).then_some(r.server_cpu_pct_mean),
    },
    Metric {
        slug: "rss",
        may_log: false,
        name: "server memory",
        y_label: "server peak RSS (MiB)",
        value: |r| watched(r).then_some(r.server_rss_peak_kb_mean / 1024.0),
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

/// Every chart of the report, in report order.
pub fn all(s: &SweepSummary) -> anyhow::Result<Vec<Chart>> {
    let mut charts = Vec::new();
    let mut used = std::collections::HashSet::new();
    for exp in &s.experiments {
        let pairs = of_experiment(s, exp);
        let mut paths: Vec<&str> = Vec::new();
        for (g, _) in &pairs {
            if !paths.contains(&g.key.path.as_str()) {
                paths.push(&g.key.path);
            }
        }
        for path in &paths {
            let set: Vec<(&Group, &SummaryRow)> = pairs
                .iter()
                .filter(|(g, _)| g.key.path == *path)
                .copied()
                .collect();
            let split = paths.len() > 1;
            let stem = if split {
                format!("{}-{}", slug(exp), slug(path))
            } else {
                slug(exp)
            };
            for m in &METRICS {
                let Some(spec) = spec(exp, split.then_some(*path), m, &set) else {
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
                    svg: plot::svg(&spec)?,
                });
            }
        }
    }
    Ok(charts)
}

/// The chart of one metric over one set of configurations, or `None`
/// when no configuration has a value for it.
fn spec(
    exp: &str,
    path: Option<&str>,
    m: &Metric,
    set: &[(&Group, &SummaryRow)],
) -> Option<ChartSpec> {
    let v = Varies::of(set.iter().map(|(g, _)| &g.key));
    let x = if !v.concurrency && v.workers {
        XDim::Workers
    } else {
        XDim::Concurrency
    };

    // Workers and cpus name a line only when one target has several of
    // them; a count that merely differs between targets (each model's
    // default pool) is in the table, not in every legend entry.
    let within = set.iter().fold(Varies::default(), |acc, (g, _)| {
        let v = Varies::of(
            set.iter()
                .map(|(h, _)| &h.key)
                .filter(|k| k.target == g.key.target),
        );
        Varies {
            workers: acc.workers || v.workers,
            cpus: acc.cpus || v.cpus,
            ..acc
        }
    });

    // Lines keep the order of the summary; colour follows the line's
    // identity without keep-alive, so on/off pairs share a colour and
    // differ by dash.
    let mut series: Vec<Series> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let mut bases: Vec<String> = Vec::new();
    for (g, r) in set {
        let Some(y) = (m.value)(r) else { continue };
        let k = &g.key;
        let mut qualifiers = String::new();
        if within.workers && x != XDim::Workers {
            qualifiers.push_str(&format!(" workers={}", k.workers));
        }
        if within.cpus {
            qualifiers.push_str(&format!(" cpus={}", k.cpus));
        }
        if v.load {
            qualifiers.push_str(&format!(" {}", k.load_label()));
        }
        let base = format!("{}{qualifiers}", k.target);
        let keepalive = if v.keepalive {
            format!(" keep-alive {}", on_off(k.keepalive))
        } else {
            String::new()
        };
        // A long target (a `cmd:` line) is cut in the legend, never the
        // words that tell two of its lines apart.
        let tail = format!("{qualifiers}{keepalive}");
        let room = plot::LABEL_MAX.saturating_sub(tail.chars().count()).max(8);
        let label = format!("{}{tail}", plot::shorten_to(&k.target, room));
        let color = match bases.iter().position(|b| *b == base) {
            Some(i) => i,
            None => {
                bases.push(base.clone());
                bases.len() - 1
            }
        };
        let xv = match x {
            XDim::Concurrency => k.concurrency,
            XDim::Workers => k.workers,
        } as f64;
        // Lines are told apart by their full names; cut labels may clash.
        let id = format!("{base}{keepalive}");
        match ids.iter().position(|i| *i == id) {
            Some(i) => series[i].points.push((xv, y)),
            None => {
                ids.push(id);
                series.push(Series {
                    label,
                    color,
                    dashed: v.keepalive && !k.keepalive,
                    points: vec![(xv, y)],
                });
            }
        }
    }
    for s in &mut series {
        s.points.retain(|p| p.0.is_finite() && p.1.is_finite());
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    series.retain(|s| !s.points.is_empty());
    if series.is_empty() {
        return None;
    }

    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    // A log axis when the values span decades (1, 10, 100, 1000), so the
    // small concurrencies are not squeezed into the corner.
    let log_x = x == XDim::Concurrency && lo > 0.0 && hi / lo >= 20.0;
    let x_name = match x {
        XDim::Concurrency => "concurrency",
        XDim::Workers => "workers",
    };
    let x_label = match (x, log_x) {
        (XDim::Concurrency, true) => "concurrency (log scale)".to_string(),
        (XDim::Concurrency, false) => "concurrency".to_string(),
        (XDim::Workers, _) => "workers".to_string(),
    };
    let (y_lo, y_hi) = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| {
            (lo.min(y), hi.max(y))
        });
    let log_y = m.may_log && y_lo > 0.0 && y_hi / y_lo >= 100.0;
    let y_label = if log_y {
        format!("{} (log scale)", m.y_label)
    } else {
        m.y_label.to_string()
    };
    let mut title = format!("{exp}: {} vs {x_name}", m.name);
    if let Some(p) = path {
        title.push_str(&format!(" ({p})"));
    }
    Some(ChartSpec {
        title,
        x_label,
        y_label,
        log_x,
        log_y,
        integer_x: true,
        series,
    })
}
