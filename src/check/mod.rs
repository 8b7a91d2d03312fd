//! check: diagnoses a server by speaking raw bytes to it (split writes,
//! pipelining, interleaved concurrent requests, slow heads, bad input,
//! traversal forms, connect bursts) and watching its processes and the
//! kernel's TCP counters. Each defect has a stable id (`catalogue`), and
//! each finding its evidence (`outcome`); `subject` is the target as the
//! checks see it; `run` orders the families and
//! bounds their time; `render` writes text or JSON.

pub mod catalogue;
mod concurrency;
mod connections;
mod framing;
pub mod outcome;
pub mod probe;
mod process;
pub mod render;
mod robustness;
pub mod run;
mod safety;
mod subject;

pub use outcome::{CheckReport, Finding, Verdict};
pub use run::{run, Target};
pub use subject::{Canary, Options};
