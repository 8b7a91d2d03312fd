//! What a bench run shows and writes beside its report: how to present
//! the result and what runs beside the load (`Options`), the per-request
//! files (`--per-request`, `-g`, `--series-csv`), and which outputs, in
//! ab's or hey's layout, cannot carry the run's verdict.

use std::path::PathBuf;

use super::bench_server::ServerWatchSpec;
use super::fail_on::Conditions;
use super::output::write_whole;
use crate::bench::records::{gnuplot_tsv, per_request_csv, MAX_RECORDS};
use crate::bench::render::{series_csv, AbOptions, Format};
use crate::bench::slow::SlowSpec;
use crate::bench::BenchResult;

/// How to present the result, and what runs beside the load.
pub struct Options {
    /// Slow connections held for the run (`--slow`).
    pub slow: Option<SlowSpec>,
    pub fail_on: Conditions,
    pub format: Format,
    /// ab's -d, -S and -w (with -x -y -z).
    pub ab: AbOptions,
    pub out: Option<PathBuf>,
    pub csvfile: Option<PathBuf>,
    /// Per-request records, hey's CSV (`--per-request`) and ab's TSV (`-g`).
    pub per_request: Option<PathBuf>,
    pub gnuplot: Option<PathBuf>,
    pub series_csv: Option<PathBuf>,
    pub quiet: bool,
    /// `--server-pid`: the server watched over the run.
    pub server: Option<ServerWatchSpec>,
}

/// The outputs written in ab's or hey's layout, which cannot carry the
/// verdict, each named with its flag.
pub fn ab_layout_files(opts: &Options) -> Vec<String> {
    let html = (opts.format == Format::Ab && opts.ab.html.is_some()).then(|| match &opts.out {
        Some(p) => format!("{} (-w)", p.display()),
        None => "the -w HTML on stdout".to_string(),
    });
    let named = [
        ("-e", &opts.csvfile),
        ("--per-request", &opts.per_request),
        ("-g", &opts.gnuplot),
    ];
    html.into_iter()
        .chain(
            named
                .into_iter()
                .filter_map(|(flag, p)| p.as_ref().map(|p| format!("{} ({flag})", p.display()))),
        )
        .collect()
}

/// Writes what `--per-request`, `-g` and `--series-csv` asked for, each
/// whole or not at all, and says on stderr if the record buffer filled.
pub fn write_records(result: &BenchResult, opts: &Options) -> anyhow::Result<()> {
    let records = &result.records;
    if let Some(path) = &opts.per_request {
        write_whole(path, &per_request_csv(records))?;
    }
    if let Some(path) = &opts.gnuplot {
        let start = result.stats.series.start_unix_us.unwrap_or(0);
        write_whole(path, &gnuplot_tsv(records, start))?;
    }
    if records.left_out > 0 {
        eprintln!(
            "loadlab: warning: per-request records keep at most {MAX_RECORDS} requests; \
             {} answered requests after that are not in the file",
            records.left_out
        );
    }
    if let Some(path) = &opts.series_csv {
        write_whole(path, &series_csv(result))?;
    }
    Ok(())
}
