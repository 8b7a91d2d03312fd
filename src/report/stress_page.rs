//! A stress results directory rendered as a page: index.html with the
//! findings first, then E2's question, the command that reproduces the
//! matrix, how to read it, the charts and the table. Read from stress.json
//! (or stress.csv when only that is there), so `loadlab report DIR`
//! renders what `loadlab stress --out DIR` wrote, and the same bytes
//! every time.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::explain;
use super::findings::defects;
use super::page::{charts_html, findings_html, head, intro_html, table_html};
use super::stress::{table, LEGEND};
use super::stress_charts;
use super::stress_findings::findings;
use super::table::esc;
use super::{write, InputError, INDEX_HTML};
use crate::results::diagnosis::Diagnosis;
use crate::results::stress::{size_label, StressReport, StressRow};

pub const STRESS_JSON: &str = "stress.json";
pub const STRESS_CSV: &str = "stress.csv";

/// What a stress page is drawn from.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct StressInputs {
    /// "spawned" or the `--url` the run was pointed at; empty when only
    /// stress.csv was found.
    pub target: String,
    pub rows: Vec<StressRow>,
    pub notes: Vec<String>,
    pub elapsed_s: Option<f64>,
    /// What the check before each server's first cell found.
    pub diagnoses: Vec<Diagnosis>,
}

impl StressInputs {
    pub fn of(r: &StressReport) -> StressInputs {
        StressInputs {
            target: r.target.clone(),
            rows: r.rows.clone(),
            notes: r.notes.clone(),
            elapsed_s: Some(r.elapsed_s),
            diagnoses: r.diagnoses.clone(),
        }
    }
}

/// A directory `loadlab stress` wrote.
pub fn is_stress_dir(dir: &Path) -> bool {
    dir.join(STRESS_JSON).is_file() || dir.join(STRESS_CSV).is_file()
}

/// Reads stress.json, or the rows of stress.csv without it.
pub fn load(dir: &Path) -> Result<StressInputs, InputError> {
    let unreadable = |p: &Path, e: &dyn std::fmt::Display| {
        InputError::Unreadable(format!("{}: {e}", p.display()))
    };
    let json = dir.join(STRESS_JSON);
    if json.is_file() {
        let text = std::fs::read_to_string(&json).map_err(|e| unreadable(&json, &e))?;
        return serde_json::from_str(&text).map_err(|e| unreadable(&json, &e));
    }
    let csv_path = dir.join(STRESS_CSV);
    let mut r = csv::Reader::from_path(&csv_path).map_err(|e| unreadable(&csv_path, &e))?;
    let rows = r
        .deserialize()
        .collect::<Result<Vec<StressRow>, _>>()
        .map_err(|e| unreadable(&csv_path, &e))?;
    Ok(StressInputs {
        rows,
        ..StressInputs::default()
    })
}

/// The `loadlab stress` command that measures the same matrix: every
/// list taken from the rows, so it holds for a preset and for flags alike.
pub fn command(s: &StressInputs) -> Option<String> {
    if s.rows.is_empty() {
        return None;
    }
    fn list<T: PartialEq + Ord + Clone>(
        v: impl Iterator<Item = T>,
        show: impl Fn(&T) -> String,
    ) -> String {
        let mut u: Vec<T> = Vec::new();
        for x in v {
            if !u.contains(&x) {
                u.push(x);
            }
        }
        u.sort();
        u.iter().map(show).collect::<Vec<_>>().join(",")
    }
    let rows = &s.rows;
    let mut c = format!(
        "loadlab stress --ops {} --sizes {} --clients {}",
        list(rows.iter().map(|r| r.op), |o| o.to_string()),
        list(rows.iter().map(|r| r.size), |n| size_label(*n)),
        list(rows.iter().map(|r| r.clients), |n| n.to_string()),
    );
    if s.target.is_empty() || s.target == "spawned" {
        let workers = list(rows.iter().filter_map(|r| r.server_workers), |n| {
            n.to_string()
        });
        let mut models: Vec<&str> = Vec::new();
        for r in rows {
            if !models.contains(&r.model.as_str()) {
                models.push(&r.model);
            }
        }
        c.push_str(&format!(
            " --server-workers {workers} --models {}",
            models.join(",")
        ));
    } else {
        c.push_str(&format!(" --url {}", s.target));
    }
    Some(c)
}

pub fn html(s: &StressInputs) -> String {
    let charts = stress_charts::all(&s.rows);
    let mut o = head("loadlab stress report");
    o.push_str("<h1>loadlab stress report</h1>\n");
    // A defect the check found explains what follows: it goes first.
    let mut found: Vec<String> = defects::sentences(&s.diagnoses)
        .into_iter()
        .map(|f| f.text)
        .collect();
    found.extend(findings(&s.rows));
    o.push_str(&findings_html(&found));
    o.push_str(&super::targets::html(&s.diagnoses));
    let transfers: usize = s.rows.iter().map(|r| r.clients).sum();
    let failed: usize = s.rows.iter().map(|r| r.failed).sum();
    let mut facts = format!(
        "{} cells, {transfers} transfers, {failed} failed",
        s.rows.len()
    );
    if !s.target.is_empty() {
        facts.push_str(&format!("; target: {}", s.target));
    }
    if let Some(t) = s.elapsed_s {
        facts.push_str(&format!("; run time {t:.1} s"));
    }
    o.push_str(&format!("<p>{}.</p>\n", esc(&facts)));
    o.push_str("<section id=\"experiment-e2\">\n<h2>Experiment e2: file transfers</h2>\n");
    let mut intro = explain::stress_intro(s.rows.iter().map(|r| r.model.as_str()));
    intro.command = command(s);
    o.push_str(&intro_html(&intro));
    let refs: Vec<&_> = charts.iter().collect();
    o.push_str(&charts_html(&refs));
    let mut t = table(&s.rows);
    t.title = "Every cell".into();
    o.push_str(&table_html(&t, 3));
    o.push_str(&format!("<pre class=\"legend\">{}</pre>\n", esc(LEGEND)));
    for n in &s.notes {
        o.push_str(&format!("<p class=\"note\">Note: {}</p>\n", esc(n)));
    }
    o.push_str("</section>\n</body>\n</html>\n");
    o
}

/// Writes index.html into `dir`; returns its path.
pub fn render(dir: &Path, s: &StressInputs) -> anyhow::Result<PathBuf> {
    write(dir, INDEX_HTML, html(s).as_bytes())
}
