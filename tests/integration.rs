//! Every integration test, as modules of one test binary (as ripgrep's
//! tests/tests.rs): one link instead of one per file, and one set of
//! shared helpers (`common`). Tests start real servers on 127.0.0.1 port 0
//! with their own temp directories, so they run in parallel; the few that
//! need the machine to themselves or run one at a time are named in
//! .config/nextest.toml, which says why.

#[macro_use]
mod common;

mod accounting;
mod architecture;
mod bench;
mod bench_abflags;
mod bench_cli;
mod bench_misbehaving;
mod bench_nginx;
mod bench_schema;
mod bench_tls;
mod browser;
mod check;
mod clients;
mod compare;
mod conformance;
mod doc_examples;
mod doc_reference;
mod echo_memory;
mod file_races;
mod files;
mod fuzz;
mod golden;
mod http_semantics;
mod io_uring;
mod k8s_job;
mod lab;
mod layers;
mod lifecycle;
mod offload;
mod profile;
mod report;
mod shutdown;
mod slow_clients;
mod slurm;
mod smoke;
mod state_machine;
mod stress;
mod stress_interrupt;
mod stress_schema;
mod summary_schema;
mod sweep_targets;
mod syscall_budget;
mod write_fairness;
