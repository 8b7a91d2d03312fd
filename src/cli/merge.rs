//! `loadlab merge a.json b.json ...`: combine runs made at the same time
//! by several clients into the statistics of one run.

use std::path::PathBuf;

use clap::Args;

use super::output::{check_writable, emit, same_file, write_whole};
use super::values::UsageError;
use crate::bench::combine;
use crate::bench::render::{render, series_csv, Format};

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
    /// in bench --series-csv's columns (docs/guide/bench.md).
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
    let names: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
    let results = args
        .files
        .iter()
        .map(|f| combine::read(f))
        .collect::<Result<Vec<_>, _>>()
        .map_err(UsageError)?;
    let combine::Merged {
        result: merged,
        notes,
    } = combine::merge(&names, &results, args.allow_apart).map_err(UsageError)?;
    for n in notes {
        eprintln!("loadlab: note: {n}");
    }
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
