//! Merging bench JSON files as one run, with every check `loadlab merge`
//! makes: the shards complete and of one load, loops and keep-alive
//! alike, the runs overlapping in time. `loadlab merge` and a sweep over
//! shards both merge through here, so they refuse the same inputs with the
//! same words.

use std::path::Path;

use super::clock::{apart, Window};
use super::json::BenchJson;
use super::result::{BenchResult, MergeError};
use super::shard::{check_complete, ShardError};

/// A merge and what the user should hear about it.
#[derive(Debug)]
pub struct Merged {
    pub result: BenchResult,
    /// Lines for stderr: runs merged although apart (`allow_apart`).
    pub notes: Vec<String>,
}

/// Reads one bench JSON result; the error is one line naming the file.
pub fn read(path: &Path) -> Result<BenchResult, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let json: BenchJson = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a loadlab bench JSON result: {e}", path.display()))?;
    json.into_result()
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Merges `results` (named `names[i]` in messages) into one run. Refused,
/// in one line: shards missing, twice or of different loads; open and
/// closed loop or keep-alive and not mixed; runs that did not overlap in
/// time unless `allow_apart`.
pub fn merge(
    names: &[String],
    results: &[BenchResult],
    allow_apart: bool,
) -> Result<Merged, String> {
    check_shards(names, results)?;
    let result = BenchResult::merge(results).map_err(|e| match e {
        MergeError::MixedLoops { open, closed } => format!(
            "cannot merge {} (open loop, --rate) with {} (closed loop): their latencies are measured from different instants",
            names[open], names[closed]
        ),
        MergeError::MixedKeepAlive { other } => format!(
            "cannot merge {} with {}: one was run with keep-alive (-k), the other without",
            names[0], names[other]
        ),
        e => e.to_string(),
    })?;
    // After the merge's own checks: runs that cannot be merged at all say
    // why before runs merely apart in time do.
    let notes = check_overlap(names, results, allow_apart)?;
    Ok(Merged { result, notes })
}

/// Shards must be every shard of one load, each once; the error names the
/// files (or, for a missing shard, which index is missing).
fn check_shards(names: &[String], results: &[BenchResult]) -> Result<(), String> {
    let shards: Vec<_> = results.iter().map(|r| r.shard.as_ref()).collect();
    let name = |i: usize| &names[i];
    check_complete(&shards).map_err(|e| match e {
        ShardError::NotAShard { run, shard } => format!(
            "cannot merge {} (not a shard) with {} (a shard, --shard)",
            name(run),
            name(shard)
        ),
        ShardError::Duplicate {
            index,
            first,
            second,
        } => format!(
            "{} and {} are both shard {index}: its requests would be counted twice",
            name(first),
            name(second)
        ),
        ShardError::MixedCounts {
            other,
            other_count,
            count,
        } => format!(
            "{} is one of {other_count} shards, {} one of {count}",
            name(other),
            name(0)
        ),
        ShardError::Missing { count, missing } => format!(
            "incomplete: {e} (a load of {count} shards; was a shard killed or its file lost?)",
            e = ShardError::Missing { count, missing }
        ),
        ShardError::MixedConfig { other, .. } => format!(
            "{} and {} are shards of different load configurations (-n, -c, --rate, URL, request, timeouts or --start-at differ)",
            name(0),
            name(other)
        ),
        ShardError::MixedHistograms { other } => format!(
            "{} and {} recorded latencies with different histogram parameters (different loadlab versions?)",
            name(0),
            name(other)
        ),
    })
}

/// Runs merged as one must have measured at the same time; files from
/// before windows were recorded are taken on trust.
fn check_overlap(
    names: &[String],
    results: &[BenchResult],
    allow_apart: bool,
) -> Result<Vec<String>, String> {
    let Some(windows) = results
        .iter()
        .map(|r| r.window)
        .collect::<Option<Vec<Window>>>()
    else {
        return Ok(Vec::new());
    };
    let Some(a) = apart(&windows) else {
        return Ok(Vec::new());
    };
    let msg = format!(
        "{} ended {:.3} s before {} started: the runs did not overlap in time",
        names[a.ended_first],
        a.gap_ms / 1e3,
        names[a.started_last]
    );
    match allow_apart {
        true => Ok(vec![format!("{msg} (merged anyway: --allow-apart)")]),
        false => Err(format!("{msg}; --allow-apart merges them anyway")),
    }
}
