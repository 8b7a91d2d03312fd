//! `loadlab compare A --vs B` (or `loadlab compare A B`): two runs side by
//! side. Flags become two sides and options; a side that is not a loadlab
//! result, or no cell in common, is a usage error (exit 2); a `--fail-on`
//! threshold passed exits 3 after the report is out.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::exit::Exit;
use super::output::emit;
use super::values::UsageError;
use crate::report::compare::gate::{self, Gate};
use crate::report::compare::{compare, html, json, render, side};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    Markdown,
    Json,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Side A: a sweep or stress results directory, or bench JSON files
    /// (`loadlab bench --format json`) taken as repeats. Without --vs,
    /// exactly two arguments: A and B.
    #[arg(value_name = "A", required = true, num_args = 1..)]
    pub a: Vec<PathBuf>,
    /// Side B, read as A is.
    #[arg(long, value_name = "B", num_args = 1..)]
    pub vs: Vec<PathBuf>,
    /// text (a table for the terminal), markdown (for a pull request) or
    /// json (docs/schema/compare-v1.schema.json).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write a page with both runs' curves overlaid.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Exit 3 when a change is past a threshold with its whole 95 %
    /// interval, e.g. 'rps<-5%,p99>+10%,cpu>+5%'.
    #[arg(long, value_name = "CONDITIONS", value_parser = gate::parse)]
    pub fail_on: Vec<Vec<Gate>>,
    /// Compare cells whose load settings differ (shown, marked) instead of
    /// refusing them.
    #[arg(long)]
    pub force: bool,
}

/// `sweep --compare-to DIR`: the earlier run, read now so a wrong
/// directory is refused before the sweep, as an absolute path for
/// sweep.json.
pub fn earlier_run(dir: &std::path::Path) -> Result<String, UsageError> {
    let bad = |e: String| UsageError(format!("--compare-to: {e}"));
    side::load(&[dir.to_path_buf()]).map_err(|e| bad(e.to_string()))?;
    let abs = std::fs::canonicalize(dir).map_err(|e| bad(format!("{}: {e}", dir.display())))?;
    Ok(abs.display().to_string())
}

pub fn run(args: CompareArgs) -> anyhow::Result<()> {
    let (a, b) = match (args.a.as_slice(), args.vs.is_empty()) {
        ([a, b], true) => (vec![a.clone()], vec![b.clone()]),
        (_, true) => {
            return Err(
                UsageError("give two results (loadlab compare A B) or A --vs B".into()).into(),
            )
        }
        (a, false) => (a.to_vec(), args.vs.clone()),
    };
    let usage = |e: crate::report::InputError| UsageError(e.to_string());
    let (sa, sb) = (
        side::load(&a).map_err(usage)?,
        side::load(&b).map_err(usage)?,
    );
    let c = compare(&sa, &sb, args.force).map_err(usage)?;
    let text = match args.format {
        Format::Text => render::text(&c),
        Format::Markdown => render::markdown(&c),
        Format::Json => json::json(&c),
    };
    emit(&text, None)?;
    if let Some(f) = &args.html {
        html::write(&c, f)?;
    }
    let gates: Vec<Gate> = args.fail_on.concat();
    let held = gate::held(&gates, &c.cells, &c.shown);
    if held.is_empty() {
        Ok(())
    } else {
        Err(Exit::conditions_held(&held))
    }
}
