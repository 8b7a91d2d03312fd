//! What a comparison is made of: each side (a results directory or a set
//! of bench JSONs) as cells holding their per-run values, and the list of
//! metrics compared. Plain data; loading is `side`, matching `matching`.

use std::collections::BTreeMap;

use crate::results::raw::Machine;

/// A figure compared between the sides, one value per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    Rps,
    P50,
    P99,
    P999,
    CpuPerRequest,
    Rss,
    /// Stress: bytes of verified transfers per second, all clients.
    AggregateMbps,
    /// Stress: the mean client's own transfer rate.
    ClientMbps,
}

impl Metric {
    pub const ALL: [Metric; 8] = [
        Metric::Rps,
        Metric::P50,
        Metric::P99,
        Metric::P999,
        Metric::CpuPerRequest,
        Metric::Rss,
        Metric::AggregateMbps,
        Metric::ClientMbps,
    ];

    /// The name JSON and `--fail-on` use.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Rps => "rps",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::P999 => "p999",
            Metric::CpuPerRequest => "cpu",
            Metric::Rss => "rss",
            Metric::AggregateMbps => "aggregate",
            Metric::ClientMbps => "per_client",
        }
    }

    /// The heading tables use, with the unit.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Rps => "requests/s",
            Metric::P50 => "p50 ms",
            Metric::P99 => "p99 ms",
            Metric::P999 => "p99.9 ms",
            Metric::CpuPerRequest => "server CPU µs/req",
            Metric::Rss => "peak RSS MiB",
            Metric::AggregateMbps => "aggregate MB/s",
            Metric::ClientMbps => "per-client MB/s",
        }
    }

    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Metric::Rps | Metric::AggregateMbps | Metric::ClientMbps
        )
    }

    pub fn decimals(self) -> usize {
        match self {
            Metric::Rps => 0,
            Metric::P50 | Metric::P99 | Metric::P999 => 3,
            _ => 1,
        }
    }

    pub fn parse(s: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// One run's figures (a metric is absent when the run did not measure
/// it: bench does not watch the server).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run {
    /// The round it ran in, within its own sweep only.
    pub round: u64,
    pub values: BTreeMap<Metric, f64>,
}

/// One configuration of one side.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    pub target: String,
    /// What else names the cell (path, concurrency, rate, keep-alive...),
    /// in a fixed order; equal dimensions are what makes cells common.
    pub dims: Vec<(&'static str, String)>,
    /// The load each run applied ("1000 requests", "2 s"): cells whose
    /// load differs are not compared unless forced.
    pub load: String,
    pub runs: Vec<Run>,
    /// Failed requests plus runs that could not be made.
    pub failed: u64,
    /// A run's load generator was the bottleneck.
    pub client_bound: bool,
    /// The same configuration of the sweep's baseline target, for the
    /// double ratio (None for the baseline itself, or without one).
    pub baseline: Option<(String, Vec<Run>)>,
}

impl Cell {
    /// The per-run values of `m` (runs that lack it left out).
    pub fn values(&self, m: Metric) -> Vec<f64> {
        self.runs
            .iter()
            .filter_map(|r| r.values.get(&m).copied())
            .collect()
    }

    /// "c=10 keepalive=on" for tables: the values of the dimensions in
    /// `shown` (those that vary; the header names the fixed ones).
    pub fn where_label(&self, shown: &[&str]) -> String {
        self.dims
            .iter()
            .filter(|(k, v)| !v.is_empty() && shown.contains(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Which kind of result a side is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sweep,
    Stress,
    Bench,
}

impl Kind {
    pub fn word(self) -> &'static str {
        match self {
            Kind::Sweep => "sweep",
            Kind::Stress => "stress",
            Kind::Bench => "bench",
        }
    }
}

/// One side of the comparison.
#[derive(Debug, Clone)]
pub struct Side {
    /// The directory or files, as given.
    pub source: String,
    pub kind: Kind,
    pub version: Option<String>,
    pub machine: Option<Machine>,
    /// How the CPUs were split between server and load generator.
    pub cpu_split: Vec<String>,
    /// What else the host was doing (load, steal, busy processes).
    pub host: Vec<String>,
    pub cells: Vec<Cell>,
}

impl Side {
    /// The distinct targets, in cell order.
    pub fn targets(&self) -> Vec<&str> {
        let mut t: Vec<&str> = Vec::new();
        for c in &self.cells {
            if !t.contains(&c.target.as_str()) {
                t.push(&c.target);
            }
        }
        t
    }
}
