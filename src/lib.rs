//! loadlab: serve HTTP/1.1 in several concurrency models, load them like ab and
//! wrk, and run the experiments that compare them.
//!
//! Layers, with dependencies pointing down only: `cli` -> `server` -> `http`.

pub mod bench;
pub mod cli;
pub mod http;
pub mod lab;
pub mod net;
pub mod proc;
pub mod report;
pub mod results;

pub mod server;
pub mod stress;
pub mod sys;
