//! A stress run rendered: the table printed on stdout and the CSV, JSON
//! and Markdown files written to `--out`, all from `results::stress`
//! records through the one table writer. Nothing here measures anything.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::table::{Align, Table};
use crate::results::stress::{size_label, StressReport, StressRow};

/// What each column means: printed under the Markdown table and in
/// `loadlab stress --help`, and repeated in the JSON schema.
pub const LEGEND: &str = "\
Columns (one row per cell; MB = 10^6 bytes):
  op, size, clients   the operation, the file size, the concurrent clients
  workers, model      the server's workers and model (- and external with --url)
  time (s)            from the first client's start to the last client's end
  per client (MB/s)   mean over succeeded transfers of size / that transfer's time
  aggregate (MB/s)    bytes of succeeded transfers / the cell's time
  succeeded           transfers answered with success whose bytes verified
  failed              every other transfer: error, timeout, wrong bytes, or
                      a server that did not start; succeeded + failed = clients
  verified            transfers whose SHA-256 matched (uploads: the digest the
                      server returned and a read-back sample); a transfer only
                      succeeds once verified, so this always equals succeeded
";

const HEADERS: [&str; 11] = [
    "op",
    "size",
    "clients",
    "workers",
    "model",
    "time (s)",
    "per client (MB/s)",
    "aggregate (MB/s)",
    "succeeded",
    "failed",
    "verified",
];

fn cells(r: &StressRow) -> [String; 11] {
    [
        r.op.to_string(),
        size_label(r.size),
        r.clients.to_string(),
        r.server_workers.map_or("-".into(), |w| w.to_string()),
        r.model.clone(),
        format!("{:.3}", r.total_s),
        format!("{:.1}", r.per_client_bps / 1e6),
        format!("{:.1}", r.aggregate_bps / 1e6),
        r.succeeded.to_string(),
        r.failed.to_string(),
        r.verified.to_string(),
    ]
}

/// The table of `rows`; `op` and `model` are text, the rest numbers.
pub fn table(rows: &[StressRow]) -> Table {
    let columns: Vec<(&str, Align)> = HEADERS
        .iter()
        .enumerate()
        .map(|(i, h)| {
            (
                *h,
                if i == 0 || i == 4 {
                    Align::Left
                } else {
                    Align::Right
                },
            )
        })
        .collect();
    let mut t = Table::new("stress", "", &columns);
    for r in rows {
        t.push(cells(r).to_vec());
    }
    t
}

/// The table for stdout (MB = 10^6 bytes).
pub fn terminal_table(rows: &[StressRow]) -> String {
    table(rows).to_terminal()
}

/// The Markdown document: settings, then the table.
pub fn markdown(report: &StressReport) -> String {
    let mut out = String::from("# loadlab stress\n\n");
    let m = &report.matrix;
    let list = |v: Vec<String>| v.join(", ");
    let _ = writeln!(out, "- target: {}", report.target);
    let _ = writeln!(
        out,
        "- operations: {}",
        list(m.ops.iter().map(|o| o.to_string()).collect())
    );
    let _ = writeln!(
        out,
        "- sizes: {}",
        list(m.sizes.iter().map(|&s| size_label(s)).collect())
    );
    let _ = writeln!(
        out,
        "- clients: {}",
        list(m.clients.iter().map(|c| c.to_string()).collect())
    );
    if report.target == "spawned" {
        let _ = writeln!(
            out,
            "- server workers: {}",
            list(m.server_workers.iter().map(|w| w.to_string()).collect())
        );
        let _ = writeln!(
            out,
            "- models: {}",
            list(m.models.iter().map(|m| m.to_string()).collect())
        );
    }
    let _ = writeln!(
        out,
        "- transfers: {}, failed: {}, temporary files left: {}, run time: {:.1} s\n",
        report.transfers(),
        report.failures(),
        report.temp_files_label(),
        report.elapsed_s
    );
    out.push_str(&super::targets::markdown(&report.diagnoses));
    out.push_str(&table(&report.rows).to_markdown(0));
    let _ = write!(out, "```text\n{LEGEND}```\n");
    for n in &report.notes {
        let _ = writeln!(out, "\nNote: {n}");
    }
    out
}

/// Writes `stress.csv`, `stress.json` and `stress.md` into `dir`.
pub fn write_files(dir: &Path, report: &StressReport) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in &report.rows {
        w.serialize(r)?;
    }
    let csv = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut json = serde_json::to_vec_pretty(report)?;
    json.push(b'\n');
    // Each file whole or not at all (a full disk leaves no half table).
    Ok(vec![
        super::write(dir, "stress.csv", &csv)?,
        super::write(dir, "stress.json", &json)?,
        super::write(dir, "stress.md", markdown(report).as_bytes())?,
    ])
}
