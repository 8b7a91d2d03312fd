//! Checks a sweep over shards must pass however its shards were started
//! (local processes or srun): the row holds every shard's requests, its
//! latencies are those of the shards' histograms added up, and sweep.json
//! says how many shards there were.

use std::path::{Path, PathBuf};
use std::process::Command;

use loadlab::bench::stats::decode_histogram;
use loadlab::results::raw::{self, RawRow};
use serde_json::Value;

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The one measured row of the sweep in `out`, checked against the JSON
/// its `shards` shards left in shards/run-ID/.
pub fn check_sharded_row(out: &Path, shards: u32, requests: u64, launcher: Option<&str>) -> RawRow {
    let rows: Vec<RawRow> = raw::read(out)
        .unwrap()
        .into_iter()
        .filter(|r| r.is_measured())
        .collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = rows.into_iter().next().unwrap();
    assert!(row.error.is_empty(), "{}", row.error);
    assert_eq!(
        (row.requests, row.complete, row.failed),
        (requests, requests, 0)
    );
    let info = json(&out.join("sweep.json"));
    assert_eq!(info["shards"], shards, "{info}");
    assert_eq!(info["launcher"].as_str(), launcher, "{info}");
    let files: Vec<PathBuf> = (0..shards)
        .map(|i| out.join(format!("shards/run-{}/shard-{i}.json", row.run_id)))
        .collect();
    let mut sum = loadlab::bench::stats::new_histogram();
    let mut complete = 0;
    for (i, f) in files.iter().enumerate() {
        let s = json(f);
        assert_eq!(s["shard"]["index"], i as u64, "{}", f.display());
        assert_eq!(s["shard"]["count"], shards, "{}", f.display());
        assert!(s["client"]["cpu_s"].as_f64().unwrap() > 0.0, "{s}");
        complete += s["complete"].as_u64().unwrap();
        sum.add(decode_histogram(s["histograms"]["total"].as_str().unwrap()).unwrap())
            .unwrap();
    }
    assert_eq!(complete, requests, "the shards' counts add up to the row's");
    assert_eq!(sum.len(), requests, "one latency per request");
    // The row's latencies are the summed histogram's, as `loadlab merge`
    // of the same files reports them.
    let ms = |q: f64| sum.value_at_quantile(q) as f64 / 1000.0;
    assert_eq!(row.p50_ms, ms(0.5), "{row:?}");
    assert_eq!(row.p99_ms, ms(0.99), "{row:?}");
    assert_eq!(row.p100_ms, sum.max() as f64 / 1000.0, "{row:?}");
    let merged = Command::new(super::loadlab_bin())
        .args(["merge", "--format", "json"])
        .args(&files)
        .output()
        .unwrap();
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let merged: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(merged["complete"], requests);
    assert_eq!(merged["latency_ms"]["p99"].as_f64(), Some(row.p99_ms));
    row
}
