//! Rendering results: the table printed on stdout and the CSV, JSON and
//! Markdown files written to `--out`. Nothing here measures anything.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use super::matrix::{Matrix, Op};

/// Version of the JSON document's shape; bump on incompatible changes.
/// The shape is pinned by `docs/schema/stress-v1.schema.json`.
pub const SCHEMA: &str = "loadlab.stress/1";

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

/// One cell's result. Every client's transfer is counted once, as
/// succeeded or failed; throughput counts only succeeded (verified) ones.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub op: Op,
    /// File size in bytes.
    pub size: u64,
    /// Concurrent clients.
    pub clients: usize,
    /// Server workers (None: an external server given by --url).
    pub server_workers: Option<usize>,
    /// Server model, or "external".
    pub model: String,
    /// From the first client's start to the last client's end (failed
    /// clients included), seconds.
    pub total_s: f64,
    /// Mean over succeeded transfers of size / that transfer's own time.
    pub per_client_bps: f64,
    /// Bytes moved by succeeded transfers / total time.
    pub aggregate_bps: f64,
    /// Transfers the server answered with success and whose bytes verified.
    pub succeeded: usize,
    /// All other transfers (error, timeout, wrong bytes, no server):
    /// `succeeded + failed == clients`.
    pub failed: usize,
    /// Transfers whose SHA-256 (and, for uploads, a read-back sample)
    /// matched the client's file. Equal to `succeeded`: verification is
    /// what makes a transfer succeed; the column says so in every table.
    pub verified: usize,
    /// The first failure's reason, empty when none.
    pub error: String,
}

/// Everything a run produced.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub loadlab_version: &'static str,
    /// "spawned" (stress started loadlab serve) or the --url given.
    pub target: String,
    pub timeout_s: f64,
    pub matrix: Matrix,
    pub started_unix_ms: u64,
    pub elapsed_s: f64,
    pub rows: Vec<Row>,
    /// Temporary upload files found in the servers' directories afterwards;
    /// None against --url, where they cannot be seen (the API hides them).
    pub leftover_temp_files: Option<usize>,
    /// Files of this run still present afterwards.
    pub leftover_files: usize,
    /// The run's own scratch directory (under --scratch or the system's
    /// temporary directory); None against --url, which needs none.
    pub scratch: Option<String>,
    /// The scratch directory is gone (true when there was none).
    pub scratch_removed: bool,
    /// Anything else worth knowing (a server that died, cleanup trouble).
    pub notes: Vec<String>,
}

impl Report {
    pub fn failures(&self) -> usize {
        self.rows.iter().map(|r| r.failed).sum()
    }

    pub fn transfers(&self) -> usize {
        self.rows.iter().map(|r| r.clients).sum()
    }

    pub fn clean(&self) -> bool {
        self.leftover_temp_files.unwrap_or(0) == 0
            && self.leftover_files == 0
            && self.scratch_removed
    }

    /// The temporary-file check's result in words.
    pub fn temp_files_label(&self) -> String {
        match self.leftover_temp_files {
            Some(n) => n.to_string(),
            None => "not checked (remote server)".into(),
        }
    }
}

/// `10M`, `64K`, or bytes when not a whole binary multiple.
pub fn size_label(n: u64) -> String {
    for (unit, shift) in [("G", 30), ("M", 20), ("K", 10)] {
        if n >= 1 << shift && n % (1 << shift) == 0 {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

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

fn cells(r: &Row) -> [String; 11] {
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

/// The plain-text table for stdout (MB = 10^6 bytes).
pub fn table(rows: &[Row]) -> String {
    let body: Vec<[String; 11]> = rows.iter().map(cells).collect();
    let mut width = HEADERS.map(str::len);
    for r in &body {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = String::new();
    let mut line = |cols: &[String]| {
        let parts: Vec<String> = cols
            .iter()
            .zip(width)
            .enumerate()
            .map(|(i, (c, w))| match i {
                0 | 4 => format!("{c:<w$}"),
                _ => format!("{c:>w$}"),
            })
            .collect();
        let _ = writeln!(out, "{}", parts.join("  ").trim_end());
    };
    line(&HEADERS.map(String::from));
    for r in &body {
        line(r);
    }
    out
}

/// The Markdown document: settings, then the table.
pub fn markdown(report: &Report) -> String {
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
    let _ = writeln!(out, "| {} |", HEADERS.join(" | "));
    let aligns: Vec<&str> = (0..HEADERS.len())
        .map(|i| if i == 0 || i == 4 { "---" } else { "---:" })
        .collect();
    let _ = writeln!(out, "| {} |", aligns.join(" | "));
    for r in &report.rows {
        let _ = writeln!(out, "| {} |", cells(r).join(" | "));
    }
    let _ = write!(out, "\n```text\n{LEGEND}```\n");
    for n in &report.notes {
        let _ = writeln!(out, "\nNote: {n}");
    }
    out
}

/// Writes `stress.csv`, `stress.json` and `stress.md` into `dir`.
pub fn write_files(dir: &Path, report: &Report) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let csv_path = dir.join("stress.csv");
    let mut w = csv::Writer::from_path(&csv_path)
        .with_context(|| format!("writing {}", csv_path.display()))?;
    for r in &report.rows {
        w.serialize(r)?;
    }
    w.flush()?;
    let json_path = dir.join("stress.json");
    let mut json = serde_json::to_vec_pretty(report)?;
    json.push(b'\n');
    std::fs::write(&json_path, json).with_context(|| format!("writing {}", json_path.display()))?;
    let md_path = dir.join("stress.md");
    std::fs::write(&md_path, markdown(report))
        .with_context(|| format!("writing {}", md_path.display()))?;
    Ok(vec![csv_path, json_path, md_path])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_labels() {
        assert_eq!(size_label(10 << 20), "10M");
        assert_eq!(size_label(64 << 10), "64K");
        assert_eq!(size_label(1 << 30), "1G");
        assert_eq!(size_label(1000), "1000");
    }
}
