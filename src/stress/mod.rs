//! `loadlab stress`: experiment E2's file-transfer matrix. Pools of
//! concurrent clients upload and download their own random files through
//! the `/files/` API of a server (one stress starts per model and worker
//! count, or one at `--url`); every transfer is verified by SHA-256 and
//! each cell becomes one row of a table, CSV, JSON and Markdown.
//!
//! matrix (what to run) -> runner (timed cells, using client, content and
//! target, in scratch space) -> rows in `results::stress`, which the
//! report renders.

pub mod client;
pub mod content;
pub mod matrix;
mod outcome;
pub mod runner;
pub mod scratch;
pub mod target;

pub use crate::results::stress::{StressReport, StressRow};
pub use matrix::{Cell, Matrix, Op};
pub use runner::{run, PreCheck, StressConfig, StressEvent, Target};
