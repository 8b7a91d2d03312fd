//! What a stress run covers: the E2 preset and its quick version of the
//! matrix (whose shape is `results::stress`), and its cells.

use std::fmt;

use crate::catalog::models::Model;
use crate::results::stress::size_label;
pub use crate::results::stress::{Matrix, Op};

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
        write!(f, "{} {} x{}", self.op, size_label(self.size), self.clients)?;
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
