//! Command line: clap flags become validated configs, then run; errors map
//! to exit codes (`exit`: 2 for bad arguments, 1 for failures at run time,
//! 3 and 130 carried by `exit::Exit`).

mod bench;
mod bench_ab;
mod bench_output;
mod bench_server;
mod check;
mod compare;
mod cpus;
mod default_run;
mod emit_args;
pub mod exit;
pub mod fail_on;
mod k8s_job;
mod merge;
mod output;
pub mod reference;
mod report;
mod serve;
mod stress;
mod sweep;
mod sweep_capacity;
mod sweep_progress;
pub mod values;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "loadlab",
    version,
    about = "Serve HTTP/1.1 in several concurrency models and measure them"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

// Subcommands take negative numbers as values (so that `--workers -1` is
// refused as an invalid value, not as an unknown flag); bench marks its
// numeric flags one by one, since its durations may also start with '-'.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the HTTP server in one concurrency model.
    #[command(allow_negative_numbers = true)]
    Serve(serve::ServeArgs),
    /// Load a server like ab (same flags, same report), as fast as wrk.
    Bench(Box<bench::BenchArgs>),
    /// Merge JSON results of simultaneous bench runs into one.
    Merge(merge::MergeArgs),
    /// Run an experiment: a sweep over targets and load dimensions, or a preset (e1-e6).
    #[command(allow_negative_numbers = true)]
    Sweep(Box<sweep::SweepArgs>),
    /// Re-render a results directory's summaries, charts and index.html from its raw.csv.
    Report(report::ReportArgs),
    /// Upload/download stress matrix against the file service (E2).
    #[command(allow_negative_numbers = true)]
    Stress(stress::StressArgs),
    /// Diagnose a server: framing, connections, bad input, concurrency
    /// and safety, each defect with evidence, rule and fix.
    Check(check::CheckArgs),
    /// Compare two runs (sweep or stress directories, or bench JSONs):
    /// each difference with its 95 % interval and a verdict.
    Compare(compare::CompareArgs),
}

/// Parses the process arguments, runs, and returns the exit code.
pub fn main() -> i32 {
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|c| (c, m)));
    let (cli, matches) = match parsed {
        Ok(c) => c,
        Err(e) if e.use_stderr() => {
            if let Some(why) = refused(&e) {
                eprintln!("loadlab: {why}");
                return exit::USAGE;
            }
            // One line, as for every other bad argument: clap's first line
            // names the problem; the usage block it adds is one --help away.
            let text = e.render().to_string();
            let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
            let first = lines.next().unwrap_or("invalid arguments");
            let first = first.trim_start_matches("error: ");
            // "the following required arguments were not provided:" names
            // them on the lines that follow.
            let mut line = first.to_string();
            if first.ends_with(':') {
                for named in lines.take_while(|l| !l.starts_with("Usage:")) {
                    line.push(' ');
                    line.push_str(named);
                }
            }
            eprintln!("loadlab: {line} (see --help)");
            return exit::USAGE;
        }
        Err(e) => {
            let _ = e.print();
            return 0;
        }
    };
    let result = match cli.command {
        Some(Command::Serve(args)) => serve::run(args),
        // The arguments after `bench`, as typed: the Job's pods repeat them.
        Some(Command::Bench(args)) if args.emit.emit.is_some() => {
            k8s_job::run(*args, std::env::args_os().skip(2).collect())
        }
        Some(Command::Bench(args)) => bench::run(*args),
        Some(Command::Merge(args)) => merge::run(args),
        Some(Command::Sweep(args)) => match matches.subcommand_matches("sweep") {
            Some(given) => sweep::run(*args, given),
            None => sweep::run(*args, &clap::ArgMatches::default()),
        },
        Some(Command::Report(args)) => report::run(args),
        Some(Command::Stress(args)) => stress::run(args),
        Some(Command::Check(args)) => check::run(args),
        Some(Command::Compare(args)) => compare::run(args),
        // The main job on built-in defaults: a short comparison of every
        // model (and nginx when installed), a fresh report in
        // ./loadlab-report/.
        None => default_run::run_default(),
    };
    match result {
        Ok(()) => exit::OK,
        Err(e) if is_broken_pipe(&e) => exit::OK,
        Err(e) => {
            // One line per reason (a --fail-on run may have several).
            for line in format!("{e:#}").lines() {
                eprintln!("loadlab: {line}");
            }
            exit::code_of(&e)
        }
    }
}

/// ab's refusal of a flag loadlab bench lacks, when `e` is clap's
/// "unexpected argument" for one under `bench`.
fn refused(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let in_bench = std::env::args().nth(1).as_deref() == Some("bench");
    if e.kind() != clap::error::ErrorKind::UnknownArgument {
        return None;
    }
    match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) if in_bench => bench_ab::refusal(arg),
        _ => None,
    }
}

/// Output piped into `head` that closes early is not a failure.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}
