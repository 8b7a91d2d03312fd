//! `loadlab bench` against real servers: loadlab serve, ab for comparison,
//! and a fake server that misbehaves on purpose (nginx: bench_nginx.rs).

mod ab_parsers;
mod ab_report;
mod kernel;
mod load;
mod merge;
mod records;
mod requests;
mod server_pid;
mod shard;
mod timing;
