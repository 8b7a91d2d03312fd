//! What a stress run covers: operations x file sizes x client pools x
//! server pools x models, the E2 preset and its quick version, and the
//! order cells run in.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::server::Model;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
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

const MB: u64 = 1 << 20;

impl Matrix {
    /// Experiment E2: 2 x 3 x 3 x 3 x 2 = 108 cells.
    pub fn e2() -> Matrix {
        Matrix {
            ops: vec![Op::Upload, Op::Download],
            sizes: vec![10 * MB, 50 * MB, 100 * MB],
            clients: vec![1, 5, 50],
            server_workers: vec![1, 5, 50],
            models: vec![Model::ThreadPool, Model::Prefork],
        }
    }

    /// E2's shape at a size that runs in seconds: 2 x 2 x 2 x 2 x 2 = 32
    /// cells, still with more clients than server workers.
    pub fn quick() -> Matrix {
        Matrix {
            ops: vec![Op::Upload, Op::Download],
            sizes: vec![MB, 10 * MB],
            clients: vec![1, 10],
            server_workers: vec![1, 4],
            models: vec![Model::ThreadPool, Model::Prefork],
        }
    }

    /// Number of rows a run produces.
    pub fn cells(&self, external: bool) -> usize {
        let servers = if external {
            1
        } else {
            self.server_workers.len() * self.models.len()
        };
        self.ops.len() * self.sizes.len() * self.clients.len() * servers
    }

    pub fn max_clients(&self) -> usize {
        self.clients.iter().copied().max().unwrap_or(0)
    }

    pub fn max_size(&self) -> u64 {
        self.sizes.iter().copied().max().unwrap_or(0)
    }
}

fn model_names<S: serde::Serializer>(models: &[Model], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(models.iter().map(|m| m.name()))
}

/// One cell: a row of the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub op: Op,
    pub size: u64,
    pub clients: usize,
    /// None against an external server.
    pub server: Option<(Model, usize)>,
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} x{}",
            self.op,
            super::output::size_label(self.size),
            self.clients
        )?;
        if let Some((m, w)) = self.server {
            write!(f, " -> {m} w={w}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e2_has_108_cells_and_quick_fewer() {
        assert_eq!(Matrix::e2().cells(false), 108);
        assert_eq!(Matrix::e2().cells(true), 18);
        assert!(Matrix::quick().cells(false) < 108);
        assert_eq!("upload".parse::<Op>(), Ok(Op::Upload));
        assert!("put".parse::<Op>().is_err());
    }
}
