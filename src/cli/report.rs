//! `loadlab report DIR`: re-render a results directory's summaries,
//! charts and index.html from its raw.csv, or a stress directory's
//! index.html from its stress.json.

use std::path::PathBuf;

use clap::Args;

use super::output::emit;
use super::values::UsageError;
use crate::report;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results directory holding raw.csv (and machine.json), as written by
    /// `loadlab sweep --out DIR`, or stress.json / stress.csv as written by
    /// `loadlab stress --out DIR`.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    /// Compare every configuration with this target's (a target label,
    /// or its name: `nginx`, `event-loop`) instead of sweep.json's
    /// baseline, or nginx, or the first target.
    #[arg(long, value_name = "TARGET")]
    pub baseline: Option<String>,
}

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    // A directory `loadlab stress` wrote has no raw.csv: its page is drawn
    // from stress.json (or stress.csv).
    let stress = report::stress_page::is_stress_dir(&args.dir)
        && !args.dir.join(crate::results::raw::RAW_CSV).exists();
    if stress {
        let inputs = report::stress_page::load(&args.dir).map_err(|e| UsageError(e.to_string()))?;
        let index = report::stress_page::render(&args.dir, &inputs)?;
        return emit(
            &format!("report: {} (1 file written)\n", index.display()),
            None,
        );
    }
    // A directory that cannot be read is the caller's mistake (exit 2); a
    // file that cannot be written is a failure at run time (exit 1).
    let mut inputs = report::load(&args.dir).map_err(|e| UsageError(e.to_string()))?;
    if let Some(b) = &args.baseline {
        inputs
            .set_baseline(b)
            .map_err(|e| UsageError(e.to_string()))?;
    }
    let out = report::render(&args.dir, &inputs)?;
    let line = format!(
        "report: {} ({} files written)\n",
        out.index_html.display(),
        out.files.len()
    );
    emit(&line, None)
}
