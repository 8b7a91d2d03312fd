//! Helpers every stress test shares: running `loadlab stress`, reading its
//! CSV and JSON, and the checks every run's output must pass.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;

/// The stdout table's columns, as documented in `loadlab stress --help`.
const COLUMNS: [&str; 11] = [
    "op",
    "size",
    "clients",
    "workers",
    "model",
    "time (s)",
    "per client (MB/s)",
    "aggregate (MB/s)",
    "succeeded",
    "failed",
    "verified",
];

/// Runs `loadlab stress ARGS` with TMPDIR pointing at `tmp`, so that
/// anything left in the scratch space shows up there.
pub fn stress(tmp: &Path, args: &[&str]) -> Output {
    Command::new(loadlab_bin())
        .arg("stress")
        .args(args)
        .env("TMPDIR", tmp)
        .output()
        .expect("run loadlab stress")
}

pub fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

pub fn csv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

pub fn json_file(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

pub fn num(r: &std::collections::HashMap<String, String>, k: &str) -> usize {
    r[k].parse().unwrap_or_else(|_| panic!("{k} in {r:?}"))
}

/// Every transfer is counted once: succeeded + failed = clients, and a
/// transfer succeeds only once verified.
pub fn assert_counts_agree(rows: &[std::collections::HashMap<String, String>]) {
    for r in rows {
        assert_eq!(
            num(r, "succeeded") + num(r, "failed"),
            num(r, "clients"),
            "{r:?}"
        );
        assert_eq!(num(r, "verified"), num(r, "succeeded"), "{r:?}");
        if num(r, "succeeded") == 0 {
            assert_eq!(r["aggregate_bps"].parse::<f64>().unwrap(), 0.0, "{r:?}");
            assert_eq!(r["per_client_bps"].parse::<f64>().unwrap(), 0.0, "{r:?}");
        }
    }
}

/// The stdout table's header line has exactly the documented columns
/// (a padded Markdown grid: cells between `|`).
pub fn assert_table_columns(stdout: &str) {
    let header = stdout
        .lines()
        .find(|l| l.starts_with("| op "))
        .unwrap_or_else(|| panic!("no table header in:\n{stdout}"));
    let cols: Vec<&str> = header
        .split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(cols, COLUMNS, "{header}");
}
