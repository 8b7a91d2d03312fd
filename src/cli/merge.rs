//! `loadlab merge a.json b.json ...`: combine runs made at the same time
//! by several clients into the statistics of one run.

use std::path::PathBuf;

use clap::Args;

use super::output::{check_writable, emit, same_file};
use super::values::UsageError;
use crate::bench::render::{render, Format};
use crate::bench::result::{BenchJson, BenchResult, MergeError};

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
    emit(&render(&merged, args.format), args.out.as_deref())?;
    match merged.stats.nothing_usable() {
        Some(why) => anyhow::bail!("the merged runs measured nothing usable: {why}"),
        None => Ok(()),
    }
}
