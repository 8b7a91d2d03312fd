//! Everything derived from a results directory's raw.csv: the summary
//! (CSV, JSON, Markdown), the SVG charts and the self-contained
//! index.html. Rendering is a pure function of raw.csv, machine.json and
//! sweep.json, so `loadlab report DIR` gives byte-identical files however
//! often it runs.

pub mod axis;
pub mod bars;
pub mod baseline;
pub mod capacity;
pub mod capacity_chart;
pub mod charts;
pub mod compare;
pub mod cost_chart;
pub mod e1;
pub mod explain;
pub mod findings;
pub mod kernel;
pub mod num;
pub mod page;
pub mod plot;
pub mod slow;
pub mod stress;
pub mod stress_charts;
pub mod stress_findings;
pub mod stress_page;
pub mod summary;
pub mod sweep_tables;
pub mod table;
pub mod targets;
pub mod terminal;
pub mod work;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::results::capacity::{CapacityFile, CAPACITY_JSON};
use crate::results::profile::{ProfileFile, PROFILES_DIR, PROFILE_JSON};
use crate::results::raw::{self, Machine, RawRow, MACHINE_JSON, RAW_CSV};
use crate::results::sweep_info::{SweepInfo, SWEEP_JSON};
use findings::{Finding, Kind};
use summary::{FailedRun, SummaryRow, SweepSummary};

pub const SUMMARY_CSV: &str = "summary.csv";
pub const SUMMARY_JSON: &str = "summary.json";
pub const SUMMARY_MD: &str = "summary.md";
pub const INDEX_HTML: &str = "index.html";
pub const CHARTS_DIR: &str = "charts";
/// Names the shape of summary.json; bumped when a field changes meaning.
/// 2: configurations are also told apart by load (`requests`,
/// `duration_s`), and `skipped_targets` lists targets left out.
/// 3: throughput is answered 2xx/3xx per second (`rps_mean`) with its
/// interval, each configuration has a `status`, a paired ratio to the
/// baseline, server CPU and context switches per request, and the file
/// carries the `baselines` and the `findings`.
/// 4: configurations are also told apart by slow clients (`slow`,
/// `slow_conns`), and a cell beside slow clients carries the same
/// client's p99 and failures alone (`no_slow_p99_ms`, `no_slow_failed`).
pub const SUMMARY_SCHEMA: &str = "loadlab-summary/4";

/// What a results directory holds to render from.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub raw: Vec<RawRow>,
    /// `None` when machine.json is absent: the report says so.
    pub machine: Option<Machine>,
    /// `None` when sweep.json is absent (a sweep before it was written).
    pub info: Option<SweepInfo>,
    /// `loadlab report --baseline TARGET`: overrides sweep.json's.
    pub baseline: Option<String>,
    /// capacity.json, when the sweep searched capacities.
    pub capacity: Option<CapacityFile>,
    /// profile.json, when the sweep profiled its targets (`--profile`).
    pub profile: Option<ProfileFile>,
}

impl Inputs {
    /// The target asked for as baseline: the override, else sweep.json's.
    pub fn wanted_baseline(&self) -> Option<&str> {
        self.baseline
            .as_deref()
            .or(self.info.as_ref().and_then(|i| i.baseline.as_deref()))
    }

    /// Sets the baseline override after checking it names a measured
    /// target; the error says which targets there are.
    pub fn set_baseline(&mut self, wanted: &str) -> Result<(), InputError> {
        let s = summary::summarize(&self.raw);
        let t = baseline::resolve(&s.targets(), wanted).map_err(InputError::Unreadable)?;
        self.baseline = Some(t);
        Ok(())
    }

    /// The summary, compared against the wanted baseline.
    pub fn summary(&self) -> SweepSummary {
        summary::summarize_against(&self.raw, self.wanted_baseline())
    }

    /// The findings of `s` (this directory's summary), as sentences.
    pub fn findings(&self, s: &SweepSummary) -> Vec<Finding> {
        findings::findings(
            s,
            self.info.as_ref(),
            self.machine.as_ref(),
            self.capacity.as_ref(),
        )
    }
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

/// Reads a JSON file of `dir` that may be absent.
fn optional_json<T: serde::de::DeserializeOwned>(
    dir: &Path,
    name: &str,
) -> Result<Option<T>, InputError> {
    let path = dir.join(name);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| InputError::Unreadable(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(InputError::Unreadable(format!("{}: {e}", path.display()))),
    }
}

/// Reads raw.csv, machine.json and sweep.json from `dir`.
pub fn load(dir: &Path) -> Result<Inputs, InputError> {
    if !dir.is_dir() {
        return Err(InputError::NotADirectory(dir.to_path_buf()));
    }
    if !dir.join(RAW_CSV).is_file() {
        return Err(InputError::NoRawCsv(dir.to_path_buf()));
    }
    let raw = raw::read(dir)
        .map_err(|e| InputError::Unreadable(format!("{}: {e}", dir.join(RAW_CSV).display())))?;
    Ok(Inputs {
        raw,
        machine: optional_json(dir, MACHINE_JSON)?,
        info: optional_json(dir, SWEEP_JSON)?,
        baseline: None,
        capacity: optional_json(dir, CAPACITY_JSON)?,
        profile: optional_json(dir, PROFILE_JSON)?,
    })
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
    /// Each experiment's baseline target.
    baselines: Vec<Baseline<'a>>,
    findings: &'a [Finding],
    configurations: &'a [SummaryRow],
    failed_runs: &'a [FailedRun],
    skipped_targets: &'a [FailedRun],
    /// capacity.json's results, when the sweep searched capacities.
    #[serde(skip_serializing_if = "Option::is_none")]
    capacity: Option<&'a CapacityFile>,
}

#[derive(Serialize)]
struct Baseline<'a> {
    experiment: &'a str,
    target: &'a str,
}

/// Writes summary.csv, summary.json, summary.md, charts/*.svg and
/// index.html into `dir` from `inputs`.
pub fn render(dir: &Path, inputs: &Inputs) -> anyhow::Result<RenderedFiles> {
    let s: SweepSummary = inputs.summary();
    let mut found = inputs.findings(&s);
    // An earlier run to compare with: its finding after the rankings.
    let earlier = inputs
        .info
        .as_ref()
        .and_then(|i| i.compare_to.as_deref())
        .map(|e| compare::in_sweep::against(e, dir));
    let compared = earlier.and_then(|(finding, table)| {
        let at = found
            .iter()
            .position(|f| {
                !matches!(
                    f.kind,
                    Kind::Defect | Kind::Capacity | Kind::Cost | Kind::LatencyAtRate
                )
            })
            .unwrap_or(found.len());
        found.insert(at, finding);
        table
    });
    let mut charts = charts::all(&s)?;
    // The charts that answer, in the order the page shows them above the
    // experiments: latency against offered rate, capacity, cost at equal
    // load.
    let colors = charts::target_order(&s);
    let answer_charts: Vec<charts::Chart> = match inputs.capacity.as_ref() {
        Some(f) => vec![
            capacity_chart::chart(f, &colors),
            capacity_chart::bars_chart(f, &colors),
        ],
        None => vec![],
    }
    .into_iter()
    .chain([cost_chart::chart(&s, &colors)])
    .flatten()
    .collect();
    charts.extend(answer_charts.iter().cloned());
    let m = inputs.machine.as_ref();
    let mut files = Vec::new();

    let csv_bytes = summary_csv(&s.rows)?;
    files.push(write(dir, SUMMARY_CSV, &csv_bytes)?);

    let json = SummaryJson {
        schema: SUMMARY_SCHEMA,
        machine: m,
        baselines: s
            .baselines
            .iter()
            .map(|(experiment, target)| Baseline { experiment, target })
            .collect(),
        findings: &found,
        configurations: &s.rows,
        failed_runs: &s.failed,
        skipped_targets: &s.skipped,
        capacity: inputs.capacity.as_ref(),
    };
    let mut text = serde_json::to_string_pretty(&json)?;
    text.push('\n');
    files.push(write(dir, SUMMARY_JSON, text.as_bytes())?);

    let sentences: Vec<String> = found.iter().map(|f| f.text.clone()).collect();
    let findings = &sentences[..];
    let command = inputs
        .info
        .as_ref()
        .map(|i| i.command.clone())
        .filter(|c| !c.is_empty());
    let checked = inputs
        .info
        .as_ref()
        .map(|i| i.diagnoses.as_slice())
        .unwrap_or_default();
    // What the sweep said of its CPU split (the lab words these notes).
    let split = inputs.info.as_ref().map(|i| {
        let said: Vec<&str> = i
            .notes
            .iter()
            .filter(|n| {
                n.starts_with("CPUs split")
                    || n.starts_with("--cpus ") && n.contains("load generator")
            })
            .map(String::as_str)
            .collect();
        if said.is_empty() {
            "CPUs: the load generator and the targets shared every CPU.".to_string()
        } else {
            format!("CPUs: {}.", said.join("; "))
        }
    });
    let capacity_table = inputs.capacity.as_ref().map(capacity::table);
    let mut why = findings::why::section(&s, inputs.profile.as_ref());
    for y in &mut why {
        if let Some(p) = &y.profile {
            // A flame graph that cannot be read is left out of the page;
            // its figures stay.
            y.flame_svg = std::fs::read_to_string(dir.join(PROFILES_DIR).join(&p.flame_graph)).ok();
        }
    }
    let doc = page::Doc {
        raw: &inputs.raw,
        machine: m,
        summary: &s,
        charts: &charts,
        findings,
        command: command.as_deref(),
        checked,
        split: split.as_deref(),
        capacity: capacity_table.as_ref(),
        answer_charts: &answer_charts,
        compared: compared.as_ref(),
        why: &why,
    };
    let md = page::markdown(&doc);
    files.push(write(dir, SUMMARY_MD, md.as_bytes())?);

    let cdir = dir.join(CHARTS_DIR);
    std::fs::create_dir_all(&cdir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", cdir.display()))?;
    for c in &charts {
        files.push(write(&cdir, &c.file, c.svg.as_bytes())?);
    }
    remove_stale_charts(&cdir, &charts)?;

    let html = page::html(&doc);
    let index_html = write(dir, INDEX_HTML, html.as_bytes())?;
    files.push(index_html.clone());

    Ok(RenderedFiles {
        files,
        index_html,
        summary_md: md,
    })
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

/// Writes a report file whole (see `results::whole`), so a browser
/// reloading the report while a sweep re-renders it never reads half a file.
pub(crate) fn write(dir: &Path, name: &str, bytes: &[u8]) -> anyhow::Result<PathBuf> {
    crate::results::whole::write_whole(dir, name, bytes)
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

#[cfg(test)]
mod tests {
    // `crate::report::`, not `super::`: the layers test reads a path by
    // the file it stands in, and from this file `super` is the crate.
    use crate::report::write;

    #[test]
    fn regression_a_failed_rename_left_its_temporary_file() {
        // index.html is a non-empty directory, so the rename fails.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("index.html")).unwrap();
        std::fs::write(dir.path().join("index.html/x"), b"x").unwrap();
        let err = write(dir.path(), "index.html", b"<html>").unwrap_err();
        assert!(err.to_string().contains("cannot write"), "{err}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["index.html"]);
    }
}
