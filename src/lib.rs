//! loadlab: serve HTTP/1.1 in several concurrency models, load them like ab
//! and wrk, and run the experiments that compare them.
//!
//! Layers, with dependencies pointing down only (tests/layers.rs reads
//! every `crate::` and `super::` path in src/ and holds this):
//!
//! ```text
//! cli                     flags -> validated config -> run; may use every module
//! lab  stress  report     experiments, and what they show
//! bench  check  server    the load generator, the diagnosis, the server under test
//! results  proc  net      shared ground: run records, child processes, URLs
//! http                    sans-IO HTTP/1.1
//! catalog                 a leaf every module may use: the model and preset registries, slow-client kinds
//! sys                     a leaf every module may use: cores, rlimit, civil time
//! stats                   a leaf below the jobs: intervals, ratios, ranking
//! ```
//!
//! Allowed edges, anything else is forbidden: `lab` -> bench, check, server
//! (the embedded docroot and listen constants only), results, proc, net, http,
//! stats;
//! `stress` -> results, proc, net, http; `report` -> results, stats; `bench` ->
//! net, http; `check` -> results, proc, net, http; `server` -> http,
//! results; `results`, `net` -> http; `proc` -> results, net, http (it
//! starts targets: the model registry, URLs).
//! The model and preset registries live in `catalog`, so the CLI, the lab,
//! stress and the report list models and presets without importing the
//! server or each other.

pub mod bench;
pub mod catalog;
pub mod check;
pub mod cli;
pub mod http;
pub mod lab;
pub mod net;
pub mod proc;
pub mod report;
pub mod results;
pub mod server;
pub mod stats;
pub mod stress;
pub mod sys;
