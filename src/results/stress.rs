//! A stress run's records: the matrix it covered (operations x sizes x
//! client pools x server pools x models) and one row per cell, as
//! stress.csv and stress.json hold them. `stress` measures them and
//! `report` renders them; neither imports the other.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::catalog::models::Model;

/// Version of the JSON document's shape; bump on incompatible changes.
/// The shape is pinned by `docs/schema/stress-v1.schema.json`.
pub const SCHEMA: &str = "loadlab.stress/1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Upload,
    Download,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Upload => "upload",
            Op::Download => "download",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Op {
    type Err = String;
    fn from_str(s: &str) -> Result<Op, String> {
        match s {
            "upload" => Ok(Op::Upload),
            "download" => Ok(Op::Download),
            _ => Err(format!(
                "unknown operation '{s}' (expected upload or download)"
            )),
        }
    }
}

/// The lists a run takes the cross product of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Matrix {
    pub ops: Vec<Op>,
    pub sizes: Vec<u64>,
    pub clients: Vec<usize>,
    /// Ignored (one external server) when running against `--url`.
    pub server_workers: Vec<usize>,
    #[serde(serialize_with = "model_names")]
    pub models: Vec<Model>,
}

fn model_names<S: serde::Serializer>(models: &[Model], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(models.iter().map(|m| m.name()))
}

/// One cell's result. Every client's transfer is counted once, as
/// succeeded or failed; throughput counts only succeeded (verified) ones.
/// Read back (Deserialize) by `loadlab report` on a stress directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StressRow {
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
pub struct StressReport {
    pub schema: &'static str,
    pub loadlab_version: &'static str,
    /// "spawned" (stress started loadlab serve) or the --url given.
    pub target: String,
    pub timeout_s: f64,
    pub matrix: Matrix,
    pub started_unix_ms: u64,
    pub elapsed_s: f64,
    pub rows: Vec<StressRow>,
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
    /// What the check before each server's first cell found (framing and
    /// connections); empty with `--no-check`.
    pub diagnoses: Vec<super::diagnosis::Diagnosis>,
}

impl StressReport {
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
