//! `loadlab sweep` and `loadlab` with no arguments: flags -> SweepPlan ->
//! run with progress -> report; Ctrl-C keeps what was measured.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::values::{parse_duration, UsageError};
use crate::lab::presets;
use crate::lab::raw::RawRow;
use crate::lab::sweep::{self, Load, SweepPlan};
use crate::lab::target::TargetSpec;
use crate::server::Shutdown;

#[derive(Args, Debug, Default)]
pub struct SweepArgs {
    /// A reference experiment: e1, e2, e3, e4, e5 (see EXPERIMENTS.md).
    #[arg(long)]
    pub preset: Option<String>,
    /// Smaller counts, for a first look or CI.
    #[arg(long)]
    pub quick: bool,
    /// Target (repeatable): model:NAME[:workers=N], nginx[:workers=N],
    /// cmd:'COMMAND with {port}', url:http://...
    #[arg(long = "target", short = 'T')]
    pub targets: Vec<String>,
    /// Concurrency levels, e.g. 1,10,100.
    #[arg(long, value_delimiter = ',')]
    pub concurrency: Vec<usize>,
    /// Requests per run (a list makes it a dimension).
    #[arg(long, value_delimiter = ',')]
    pub requests: Vec<u64>,
    /// Time per run instead of a request count, e.g. 2s (a list is allowed).
    #[arg(long, value_delimiter = ',', value_parser = parse_duration)]
    pub duration: Vec<Duration>,
    /// Keep-alive: on, off or on,off.
    #[arg(long, value_delimiter = ',')]
    pub keepalive: Vec<String>,
    /// Paths to request, e.g. /500B.html,/20KB.html.
    #[arg(long, value_delimiter = ',')]
    pub path: Vec<String>,
    /// Worker counts for the targets (a dimension).
    #[arg(long, value_delimiter = ',')]
    pub workers: Vec<usize>,
    /// Restrict the target to this many cores (a dimension).
    #[arg(long, value_delimiter = ',')]
    pub cpus: Vec<usize>,
    /// Measured runs per configuration.
    #[arg(long)]
    pub repeat: Option<usize>,
    /// Unmeasured warm-up runs before each configuration's repeats.
    #[arg(long, default_value_t = 0)]
    pub warmup_runs: usize,
    /// Per-request timeout.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Load-generator threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Results directory (default: loadlab-results/<timestamp>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

impl SweepArgs {
    /// Second stage: a preset's plan with explicit flags laid over it, or a
    /// plan from the flags alone.
    pub fn into_plan(self) -> anyhow::Result<(SweepPlan, PathBuf, bool)> {
        let mut plan = match &self.preset {
            Some(p) => presets::plan(p, self.quick).map_err(usage)?,
            None => {
                let mut p = presets::plan("e1", false).map_err(usage)?;
                p.experiment = "sweep".into();
                p.targets.clear();
                p.concurrency = vec![1, 10, 100];
                p
            }
        };
        if !self.targets.is_empty() {
            plan.targets = self
                .targets
                .iter()
                .map(|t| t.parse::<TargetSpec>())
                .collect::<Result<_, _>>()
                .map_err(usage)?;
        }
        if plan.targets.is_empty() {
            return Err(usage("give at least one --target (or a --preset)"));
        }
        if !self.concurrency.is_empty() {
            plan.concurrency = self.concurrency.clone();
        }
        if plan.concurrency.contains(&0) {
            return Err(usage("--concurrency values must be at least 1"));
        }
        match (self.requests.is_empty(), self.duration.is_empty()) {
            (false, false) => return Err(usage("give --requests or --duration, not both")),
            (false, true) => {
                plan.loads = self.requests.iter().map(|&n| Load::Requests(n)).collect()
            }
            (true, false) => {
                plan.loads = self.duration.iter().map(|&d| Load::Duration(d)).collect()
            }
            (true, true) => {}
        }
        for l in &plan.loads {
            match l {
                Load::Requests(0) => return Err(usage("--requests must be at least 1")),
                Load::Duration(d) if d.is_zero() => {
                    return Err(usage("--duration must be greater than 0"))
                }
                _ => {}
            }
        }
        if !self.keepalive.is_empty() {
            plan.keepalive = self
                .keepalive
                .iter()
                .map(|k| match k.as_str() {
                    "on" | "true" | "yes" => Ok(true),
                    "off" | "false" | "no" => Ok(false),
                    o => Err(usage(format!("--keepalive takes on and/or off, not '{o}'"))),
                })
                .collect::<anyhow::Result<_>>()?;
        }
        if !self.path.is_empty() {
            if let Some(p) = self.path.iter().find(|p| !p.starts_with('/')) {
                return Err(usage(format!("--path '{p}' must start with /")));
            }
            plan.paths = self.path.clone();
        }
        if !self.workers.is_empty() {
            plan.workers = self.workers.iter().map(|&w| Some(w)).collect();
        }
        if !self.cpus.is_empty() {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            if let Some(&c) = self.cpus.iter().find(|&&c| c == 0 || c > cores) {
                return Err(usage(format!("--cpus {c}: this machine has {cores} cores")));
            }
            plan.cpus = self.cpus.iter().map(|&c| Some(c)).collect();
        }
        if let Some(r) = self.repeat {
            if r == 0 {
                return Err(usage("--repeat must be at least 1"));
            }
            plan.repeat = r;
        }
        plan.warmup_runs = self.warmup_runs;
        plan.timeout = self.timeout;
        if self.threads == Some(0) {
            return Err(usage("--threads must be at least 1"));
        }
        plan.threads = self.threads;
        let out = self.out.clone().unwrap_or_else(sweep::default_out_dir);
        Ok((plan, out, self.quiet))
    }
}

pub fn run(args: SweepArgs) -> anyhow::Result<()> {
    if args.preset.as_deref() == Some("e2") {
        return run_e2(args);
    }
    let (plan, out, quiet) = args.into_plan()?;
    execute(&plan, &out, quiet)?;
    Ok(())
}

/// E2 is the file-transfer matrix of `loadlab stress`.
fn run_e2(args: SweepArgs) -> anyhow::Result<()> {
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["stress", "--preset", "e2"]);
    if args.quick {
        cmd.arg("--quick");
    }
    if let Some(out) = &args.out {
        cmd.arg("--out").arg(out);
    }
    let status = cmd.status()?;
    if !status.success() {
        anyhow::bail!("loadlab stress --preset e2 failed ({status})");
    }
    Ok(())
}

/// Runs a plan with a progress bar, renders the report, prints a summary.
pub fn execute(
    plan: &SweepPlan,
    out: &std::path::Path,
    quiet: bool,
) -> anyhow::Result<Vec<RawRow>> {
    use std::io::IsTerminal;
    let shutdown = Shutdown::from_signals()?;
    let stop = || shutdown.is_set();
    let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(plan.runs() as u64);
        if let Ok(s) =
            indicatif::ProgressStyle::with_template("{bar:40} run {pos}/{len}  eta {eta}  {msg}")
        {
            bar.set_style(s);
        }
        bar
    });
    let mut on_run = |row: &RawRow| {
        if let Some(b) = &bar {
            b.inc(1);
            b.set_message(format!(
                "{} c={} ka={}",
                row.target,
                row.concurrency,
                if row.keepalive { "on" } else { "off" }
            ));
        }
    };
    let outcome = sweep::run(plan, out, &stop, &mut on_run)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    for s in &outcome.skipped {
        eprintln!("loadlab: skipped {s}");
    }
    crate::report::render_dir(out)?;
    print_summary(&outcome.rows);
    if outcome.interrupted {
        eprintln!("loadlab: interrupted; {} runs kept", outcome.rows.len());
    }
    println!("\nReport: {}", out.join("index.html").display());
    Ok(outcome.rows)
}

/// Requests/s per target (rows) and concurrency (columns), per keep-alive
/// setting; failed runs show their error instead.
pub fn print_summary(rows: &[RawRow]) {
    let mut cs: Vec<u64> = rows
        .iter()
        .map(|r| r.concurrency)
        .filter(|&c| c > 0)
        .collect();
    cs.sort_unstable();
    cs.dedup();
    let mut keys: Vec<(String, String, bool)> = Vec::new();
    for r in rows.iter().filter(|r| !r.warmup) {
        let k = (r.target.clone(), r.path.clone(), r.keepalive);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut head = format!("| {:<26} | {:<11} | ka  |", "target", "path");
    for c in &cs {
        head.push_str(&format!(" c={c:<7} |"));
    }
    println!("\nRequests per second (mean over repeats; failed requests in brackets)\n\n{head}");
    println!(
        "|{}|",
        head[1..head.len() - 1]
            .chars()
            .map(|ch| if ch == '|' { '|' } else { '-' })
            .collect::<String>()
    );
    for (t, p, ka) in keys {
        let mut line = format!(
            "| {t:<26} | {p:<11} | {:<3} |",
            if ka { "on" } else { "off" }
        );
        for c in &cs {
            let runs: Vec<&RawRow> = rows
                .iter()
                .filter(|r| {
                    !r.warmup
                        && r.target == t
                        && r.path == p
                        && r.keepalive == ka
                        && r.concurrency == *c
                })
                .collect();
            let cell = if runs.is_empty() {
                "-".to_string()
            } else if runs.iter().any(|r| !r.error.is_empty()) {
                "error".to_string()
            } else {
                let rps =
                    runs.iter().map(|r| r.requests_per_second).sum::<f64>() / runs.len() as f64;
                let failed: u64 = runs.iter().map(|r| r.failed).sum();
                if failed > 0 {
                    format!("{rps:.0} [{failed}]")
                } else {
                    format!("{rps:.0}")
                }
            };
            line.push_str(&format!(" {cell:<9} |"));
        }
        println!("{line}");
    }
    for r in rows.iter().filter(|r| !r.error.is_empty()) {
        println!("error: {} c={}: {}", r.target, r.concurrency, r.error);
    }
}
