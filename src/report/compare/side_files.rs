//! The sides that are not sweeps: bench JSON files (`loadlab bench
//! --format json`), each file one run and all of a side's files repeats,
//! read as plain JSON so the report never imports `bench`; and a stress
//! directory, one run per cell.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::model::{Cell, Kind, Metric, Run, Side};
use crate::report::stress_page::{self, STRESS_JSON};
use crate::report::InputError;
use crate::results::config::load_label;
use crate::results::stress::size_label;

/// The schema every bench JSON names, version aside.
const BENCH_SCHEMA: &str = "loadlab.bench/";

/// Bench JSON files as one side: files with the same path, concurrency,
/// rate and keep-alive are repeats of one cell.
pub fn bench_side(files: &[PathBuf], source: String) -> Result<Side, InputError> {
    let docs = files
        .iter()
        .map(|f| read_bench(f))
        .collect::<Result<Vec<_>, _>>()?;
    let target = docs
        .first()
        .map(|d| format!("url:{}", text(&d["run"]["url"])))
        .unwrap_or_default();
    let mut cells: Vec<Cell> = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        let cell = bench_cell(d, &target);
        let run = bench_run(d, i as u64 + 1);
        let failed = d["failed"].as_u64().unwrap_or(0);
        let bound = flags(d).contains(&"client-bound");
        match cells
            .iter_mut()
            .find(|c| c.dims == cell.dims && c.load == cell.load)
        {
            Some(c) => {
                c.runs.push(run);
                c.failed += failed;
                c.client_bound |= bound;
            }
            None => cells.push(Cell {
                runs: vec![run],
                failed,
                client_bound: bound,
                ..cell
            }),
        }
    }
    Ok(Side {
        source,
        kind: Kind::Bench,
        version: docs.first().map(|d| text(&d["loadlab_version"])),
        machine: None,
        cpu_split: Vec::new(),
        host: Vec::new(),
        cells,
    })
}

/// One file, refused unless it is a bench result.
fn read_bench(f: &Path) -> Result<Value, InputError> {
    let bad = |why: String| InputError::Unreadable(format!("{}: {why}", f.display()));
    if !f.exists() {
        return Err(bad("no such file or directory".into()));
    }
    let body = std::fs::read(f).map_err(|e| bad(e.to_string()))?;
    let doc: Value = serde_json::from_slice(&body).map_err(|_| {
        bad("not a loadlab result (a sweep or stress directory, or bench JSON)".into())
    })?;
    if !text(&doc["schema"]).starts_with(BENCH_SCHEMA) || !doc["run"].is_object() {
        return Err(bad(
            "not a loadlab result (a sweep or stress directory, or bench JSON)".into(),
        ));
    }
    Ok(doc)
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn flags(d: &Value) -> Vec<&str> {
    d["verdict"]["flags"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The cell a bench run measured, without its runs.
fn bench_cell(d: &Value, target: &str) -> Cell {
    let run = &d["run"];
    let num = |k: &str| run[k].as_f64().map(|v| v.to_string()).unwrap_or_default();
    let keepalive = if run["keep_alive"].as_bool() == Some(true) {
        "on"
    } else {
        "off"
    };
    let load = load_label(
        run["requests"].as_u64().unwrap_or(0),
        run["duration_s"].as_f64().unwrap_or(0.0),
    );
    Cell {
        target: target.to_string(),
        dims: vec![
            ("path", text(&run["path"])),
            ("c", num("concurrency")),
            ("rate", num("rate")),
            ("keepalive", keepalive.into()),
        ],
        load: format!("{load}, {} threads", num("threads")),
        ..Cell::default()
    }
}

fn bench_run(d: &Value, round: u64) -> Run {
    let lat = &d["latency_ms"];
    let values: BTreeMap<Metric, f64> = [
        (Metric::Rps, &d["requests_per_second"]),
        (Metric::P50, &lat["p50"]),
        (Metric::P99, &lat["p99"]),
        (Metric::P999, &lat["p99_9"]),
    ]
    .into_iter()
    .filter_map(|(m, v)| v.as_f64().map(|x| (m, x)))
    .collect();
    Run { round, values }
}

/// A stress directory as one side: one cell per operation, size, client
/// pool, server pool and model, each measured once.
pub fn stress_side(dir: &Path, source: String) -> Result<Side, InputError> {
    let s = stress_page::load(dir)?;
    let version = std::fs::read(dir.join(STRESS_JSON))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .map(|d| text(&d["loadlab_version"]))
        .filter(|v| !v.is_empty());
    let cells = s
        .rows
        .iter()
        .map(|r| {
            let mut values = BTreeMap::new();
            if r.succeeded > 0 {
                values.insert(Metric::AggregateMbps, r.aggregate_bps / 1e6);
                values.insert(Metric::ClientMbps, r.per_client_bps / 1e6);
            }
            Cell {
                target: r.model.clone(),
                dims: vec![
                    ("op", r.op.to_string()),
                    ("size", size_label(r.size)),
                    ("clients", r.clients.to_string()),
                    (
                        "workers",
                        r.server_workers.map(|w| w.to_string()).unwrap_or_default(),
                    ),
                ],
                load: String::new(),
                runs: vec![Run { round: 1, values }],
                failed: r.failed as u64,
                ..Cell::default()
            }
        })
        .collect();
    Ok(Side {
        source,
        kind: Kind::Stress,
        version,
        machine: None,
        cpu_split: Vec::new(),
        host: Vec::new(),
        cells,
    })
}
