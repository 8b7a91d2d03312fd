//! Everything derived from a results directory's raw.csv: the summary
//! (CSV, JSON, Markdown), the SVG charts and the self-contained
//! index.html. Rendering is a pure function of raw.csv and machine.json,
//! so `loadlab report DIR` gives byte-identical files however often it
//! runs.

pub mod axis;
pub mod charts;
pub mod e1;
pub mod explain;
pub mod num;
pub mod page;
pub mod plot;
pub mod stats;
pub mod stress;
pub mod stress_charts;
pub mod stress_findings;
pub mod stress_page;
pub mod summary;
pub mod sweep_tables;
pub mod table;
pub mod terminal;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::results::raw::{self, Machine, RawRow, MACHINE_JSON, RAW_CSV};
use crate::results::sweep_info::{SweepInfo, SWEEP_JSON};
use summary::{FailedRun, SummaryRow, SweepSummary};

pub const SUMMARY_CSV: &str = "summary.csv";
pub const SUMMARY_JSON: &str = "summary.json";
pub const SUMMARY_MD: &str = "summary.md";
pub const INDEX_HTML: &str = "index.html";
pub const CHARTS_DIR: &str = "charts";
/// Names the shape of summary.json; bumped when a field changes meaning.
/// 2: configurations are also told apart by load (`requests`,
/// `duration_s`), and `skipped_targets` lists targets left out.
pub const SUMMARY_SCHEMA: &str = "loadlab-summary/2";

/// What a results directory holds to render from.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub raw: Vec<RawRow>,
    /// `None` when machine.json is absent: the report says so.
    pub machine: Option<Machine>,
}

/// The directory cannot be rendered: it is the caller's input that is
/// wrong, not the renderer (the CLI answers with exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    #[error("{0} has no raw results file {RAW_CSV}")]
    NoRawCsv(PathBuf),
    #[error("{0}")]
    Unreadable(String),
}

/// What was written, for the caller to tell the user.
#[derive(Debug, Clone)]
pub struct RenderedFiles {
    /// Every file written, in writing order.
    pub files: Vec<PathBuf>,
    pub index_html: PathBuf,
    /// The text of summary.md, for printing to a terminal.
    pub summary_md: String,
}

/// Reads raw.csv and machine.json from `dir`.
pub fn load(dir: &Path) -> Result<Inputs, InputError> {
    if !dir.is_dir() {
        return Err(InputError::NotADirectory(dir.to_path_buf()));
    }
    if !dir.join(RAW_CSV).is_file() {
        return Err(InputError::NoRawCsv(dir.to_path_buf()));
    }
    let raw = raw::read(dir)
        .map_err(|e| InputError::Unreadable(format!("{}: {e}", dir.join(RAW_CSV).display())))?;
    let mpath = dir.join(MACHINE_JSON);
    let machine = match std::fs::read_to_string(&mpath) {
        Ok(text) => Some(
            serde_json::from_str(&text)
                .map_err(|e| InputError::Unreadable(format!("{}: {e}", mpath.display())))?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(InputError::Unreadable(format!("{}: {e}", mpath.display()))),
    };
    Ok(Inputs { raw, machine })
}

/// Reads `dir` and writes every derived file into it. The sweep calls
/// this after each run set and at the end.
pub fn render_dir(dir: &Path) -> anyhow::Result<RenderedFiles> {
    let inputs = load(dir)?;
    render(dir, &inputs)
}

#[derive(Serialize)]
struct SummaryJson<'a> {
    schema: &'static str,
    machine: Option<&'a Machine>,
    configurations: &'a [SummaryRow],
    failed_runs: &'a [FailedRun],
    skipped_targets: &'a [FailedRun],
}

/// Writes summary.csv, summary.json, summary.md, charts/*.svg and
/// index.html into `dir` from `inputs`.
pub fn render(dir: &Path, inputs: &Inputs) -> anyhow::Result<RenderedFiles> {
    let s: SweepSummary = summary::summarize(&inputs.raw);
    let charts = charts::all(&s)?;
    let m = inputs.machine.as_ref();
    let mut files = Vec::new();

    let csv_bytes = summary_csv(&s.rows)?;
    files.push(write(dir, SUMMARY_CSV, &csv_bytes)?);

    let json = SummaryJson {
        schema: SUMMARY_SCHEMA,
        machine: m,
        configurations: &s.rows,
        failed_runs: &s.failed,
        skipped_targets: &s.skipped,
    };
    let mut text = serde_json::to_string_pretty(&json)?;
    text.push('\n');
    files.push(write(dir, SUMMARY_JSON, text.as_bytes())?);

    // Findings are wired in from the findings module at merge; until then
    // the section says there are none.
    let findings: &[String] = &[];
    let command = sweep_command(dir);
    let md = page::markdown(&inputs.raw, m, &s, &charts, findings, command.as_deref());
    files.push(write(dir, SUMMARY_MD, md.as_bytes())?);

    let cdir = dir.join(CHARTS_DIR);
    std::fs::create_dir_all(&cdir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", cdir.display()))?;
    for c in &charts {
        files.push(write(&cdir, &c.file, c.svg.as_bytes())?);
    }
    remove_stale_charts(&cdir, &charts)?;

    let html = page::html(&inputs.raw, m, &s, &charts, findings, command.as_deref());
    let index_html = write(dir, INDEX_HTML, html.as_bytes())?;
    files.push(index_html.clone());

    Ok(RenderedFiles {
        files,
        index_html,
        summary_md: md,
    })
}

/// The command that reproduces the sweep, from sweep.json when the sweep
/// wrote one. A sweep.json that cannot be read leaves the command out
/// rather than the report.
fn sweep_command(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(SWEEP_JSON)).ok()?;
    let info: SweepInfo = serde_json::from_str(&text).ok()?;
    Some(info.command).filter(|c| !c.is_empty())
}

/// summary.csv: one line per configuration under the header. With no
/// rows the header is still written, so the file's shape never changes.
fn summary_csv(rows: &[SummaryRow]) -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    if rows.is_empty() {
        // The csv writer only emits a header along with a row: write a
        // placeholder row and keep the header line alone.
        w.serialize(SummaryRow::default())?;
    }
    for r in rows {
        w.serialize(r)?;
    }
    let mut bytes = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
    if rows.is_empty() {
        let end = bytes
            .iter()
            .position(|b| *b == b'\n')
            .map_or(bytes.len(), |i| i + 1);
        bytes.truncate(end);
    }
    Ok(bytes)
}

/// Writes through a temporary file and a rename, so a browser reloading
/// the report while a sweep re-renders it never reads half a file.
pub(crate) fn write(dir: &Path, name: &str, bytes: &[u8]) -> anyhow::Result<PathBuf> {
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// Charts of an earlier render that this one no longer draws (a second
/// path splits `e3-rps.svg` into one per path) would otherwise linger
/// beside the new ones. Only `.svg` files in charts/ are touched.
fn remove_stale_charts(cdir: &Path, charts: &[charts::Chart]) -> anyhow::Result<()> {
    let entries = std::fs::read_dir(cdir)
        .map_err(|e| anyhow::anyhow!("cannot list {}: {e}", cdir.display()))?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.ends_with(".svg") && !charts.iter().any(|c| c.file == name) {
            let _ = std::fs::remove_file(e.path());
        }
    }
    Ok(())
}
