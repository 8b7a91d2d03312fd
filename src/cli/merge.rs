//! `loadlab merge a.json b.json ...`: combine runs made at the same time
//! by several clients into the statistics of one run.

use std::path::PathBuf;

use clap::Args;

use super::output::{check_writable, emit, same_file};
use super::values::UsageError;
use crate::bench::combine;
use crate::bench::render::{render, Format};

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
    /// Merge runs even if they did not all overlap in time (their
    /// throughput then counts only the time some run was measuring).
    #[arg(long)]
    pub allow_apart: bool,
}

pub fn run(args: MergeArgs) -> anyhow::Result<()> {
    if let Some(p) = &args.out {
        check_writable(p, "--out")?;
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
    match merged.stats.nothing_usable() {
        Some(why) => anyhow::bail!("the merged runs measured nothing usable: {why}"),
        None => Ok(()),
    }
}
