//! `loadlab merge a.json b.json ...`: combine runs made at the same time
//! by several clients into the statistics of one run.

use std::path::PathBuf;

use clap::Args;

use super::output::{check_writable, emit, same_file, write_whole};
use super::values::UsageError;
use crate::bench::clock::{apart, Window};
use crate::bench::json::BenchJson;
use crate::bench::render::{render, series_csv, Format};
use crate::bench::result::{BenchResult, MergeError};
use crate::bench::shard::{check_complete, ShardError};

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// JSON results written by `loadlab bench --format json`.
    #[arg(required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Report format of the merged result.
    #[arg(long, value_enum, default_value = "ab")]
    pub format: Format,
    /// Write the report to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write the merged requests per second over time to FILE as CSV,
    /// in bench --series-csv's columns (docs/per-request.md).
    #[arg(long, value_name = "FILE")]
    pub series_csv: Option<PathBuf>,
    /// Merge runs even if they did not all overlap in time (their
    /// throughput then counts only the time some run was measuring).
    #[arg(long)]
    pub allow_apart: bool,
}

pub fn run(args: MergeArgs) -> anyhow::Result<()> {
    let outputs: Vec<(&str, &PathBuf)> = [("--out", &args.out), ("--series-csv", &args.series_csv)]
        .into_iter()
        .filter_map(|(flag, p)| p.as_ref().map(|p| (flag, p)))
        .collect();
    for (flag, p) in &outputs {
        check_writable(p, flag)?;
        // Written after the inputs are read, it would replace one of them.
        if let Some(input) = args.files.iter().find(|f| same_file(f, p)) {
            return Err(UsageError(format!(
                "{flag} {} is one of the files to merge",
                input.display()
            ))
            .into());
        }
    }
    if let [(_, a), (_, b)] = outputs[..] {
        if same_file(a, b) {
            return Err(UsageError(format!(
                "--out and --series-csv name the same file, {}",
                a.display()
            ))
            .into());
        }
    }
    for (i, a) in args.files.iter().enumerate() {
        if let Some(b) = args.files[..i].iter().find(|b| same_file(a, b)) {
            return Err(UsageError(format!(
                "{} is given twice ({}): its requests would be counted twice",
                a.display(),
                b.display()
            ))
            .into());
        }
    }
    let mut results = Vec::new();
    for f in &args.files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| UsageError(format!("cannot read {}: {e}", f.display())))?;
        let json: BenchJson = serde_json::from_str(&text).map_err(|e| {
            UsageError(format!(
                "{} is not a loadlab bench JSON result: {e}",
                f.display()
            ))
        })?;
        results.push(
            json.into_result()
                .map_err(|e| UsageError(format!("{}: {e}", f.display())))?,
        );
    }
    check_shards(&args, &results)?;
    let merged = BenchResult::merge(&results).map_err(|e| match e {
        MergeError::MixedLoops { open, closed } => UsageError(format!(
            "cannot merge {} (open loop, --rate) with {} (closed loop): their latencies are measured from different instants",
            args.files[open].display(),
            args.files[closed].display()
        )),
        MergeError::MixedKeepAlive { other } => UsageError(format!(
            "cannot merge {} with {}: one was run with keep-alive (-k), the other without",
            args.files[0].display(),
            args.files[other].display()
        )),
        e => UsageError(e.to_string()),
    })?;
    // After the merge's own checks: runs that cannot be merged at all say
    // why before runs merely apart in time do.
    check_overlap(&args, &results)?;
    if let Some(skew) = merged.window.and_then(|w| w.start_skew_ms) {
        eprintln!(
            "loadlab: merged {} runs; their starts were {skew:.1} ms apart",
            results.len()
        );
    }
    emit(&render(&merged, args.format), args.out.as_deref())?;
    if let Some(path) = &args.series_csv {
        write_whole(path, &series_csv(&merged))?;
    }
    match merged.stats.nothing_usable() {
        Some(why) => anyhow::bail!("the merged runs measured nothing usable: {why}"),
        None => Ok(()),
    }
}

/// Shards must be every shard of one load, each once; the error names the
/// files (or, for a missing shard, which index is missing).
fn check_shards(args: &MergeArgs, results: &[BenchResult]) -> Result<(), UsageError> {
    let shards: Vec<_> = results.iter().map(|r| r.shard.as_ref()).collect();
    let name = |i: usize| args.files[i].display().to_string();
    check_complete(&shards).map_err(|e| {
        UsageError(match e {
            ShardError::NotAShard { run, shard } => format!(
                "cannot merge {} (not a shard) with {} (a shard, --shard)",
                name(run),
                name(shard)
            ),
            ShardError::Duplicate { index, first, second } => format!(
                "{} and {} are both shard {index}: its requests would be counted twice",
                name(first),
                name(second)
            ),
            ShardError::MixedCounts { other, other_count, count } => format!(
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
    })
}

/// Runs merged as one must have measured at the same time; files from
/// before windows were recorded are taken on trust.
fn check_overlap(args: &MergeArgs, results: &[BenchResult]) -> Result<(), UsageError> {
    let Some(windows) = results
        .iter()
        .map(|r| r.window)
        .collect::<Option<Vec<Window>>>()
    else {
        return Ok(());
    };
    let Some(a) = apart(&windows) else {
        return Ok(());
    };
    let msg = format!(
        "{} ended {:.3} s before {} started: the runs did not overlap in time",
        args.files[a.ended_first].display(),
        a.gap_ms / 1e3,
        args.files[a.started_last].display()
    );
    match args.allow_apart {
        true => {
            eprintln!("loadlab: note: {msg} (merged anyway: --allow-apart)");
            Ok(())
        }
        false => Err(UsageError(format!(
            "{msg}; --allow-apart merges them anyway"
        ))),
    }
}
