//! `loadlab sweep`: flags -> SweepPlan -> run with progress -> report;
//! Ctrl-C keeps what was measured. `loadlab` with no arguments runs its
//! plan through here too (`default_run`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args};

use super::cpus::{self, parse_cpus, CpuCount};
use super::fail_on::{self, Conditions};
use super::sweep_capacity::{capacity_into, CapacityFlags, RATE_CONNECTIONS};
use super::sweep_progress::{say, SweepProgress};
use super::values::{parse_duration, rate_list, UsageError};
use crate::catalog::presets::{Preset, PresetKind};
use crate::catalog::slow::SlowKind;
use crate::lab::execute::{self, SweepOutcome};
use crate::lab::plan::{Load, SweepPlan};
use crate::lab::presets;
use crate::lab::shards::{self, ShardPlan};
use crate::proc::go::{self, find_go};
use crate::proc::target::TargetSpec;
use crate::results::capacity::Objective;
use crate::results::raw::RawRow;
use crate::results::sweep_info::SweepInfo;
use crate::server::Shutdown;

/// Exit status after Ctrl-C, as a shell reports a command ended by SIGINT
/// (128 + 2): a script running `loadlab sweep ... && next` stops there.
pub const INTERRUPTED_EXIT: i32 = super::exit::INTERRUPTED;

#[derive(Args, Debug, Default)]
pub struct SweepArgs {
    /// A reference experiment, e1 to e6: what each asks and how to read it
    /// is in docs/guide/experiments.md.
    #[arg(long)]
    pub preset: Option<Preset>,
    /// Smaller counts, for a first look or CI.
    #[arg(long)]
    pub quick: bool,
    /// Target (repeatable): model:NAME[:workers=N], nginx[:workers=N],
    /// go[:workers=N] (Go's net/http, built once; workers = GOMAXPROCS),
    /// cmd:'COMMAND with {port}', url:http[s]://HOST:PORT/PATH (a url's
    /// path is the one every target requests; --path does not go with it;
    /// https is verified against the system roots or SSL_CERT_FILE).
    #[arg(long = "target", short = 'T')]
    pub targets: Vec<String>,
    /// Concurrency levels, e.g. 1,10,100.
    #[arg(long, value_delimiter = ',')]
    pub concurrency: Vec<usize>,
    /// Offered rates in requests/s, e.g. 5000,10000,20000 (a dimension):
    /// open loop, as bench's --rate, latency counted from each request's
    /// scheduled send time; --concurrency (default 50 with --rate) is the
    /// connections that carry it.
    #[arg(long, value_delimiter = ',', value_name = "PER_SECOND")]
    pub rate: Vec<f64>,
    /// Search each target's capacity: the highest offered rate served with
    /// no failed request, the rate kept and --slo met (a ladder doubling
    /// from 1,000/s, bisection to 5 %, then --repeat interleaved rounds
    /// for its interval), per --keepalive setting, into capacity.json. A
    /// load generator busy at the first failing rate makes it a bound.
    /// Without --rate the search is the whole sweep.
    #[arg(long)]
    pub capacity: bool,
    /// The latency objective of --capacity (default 'p99<10ms').
    #[arg(long, value_name = "OBJECTIVE", requires = "capacity", value_parser = Objective::parse)]
    pub slo: Option<Objective>,
    /// Requests per run (a list makes it a dimension).
    #[arg(long, value_delimiter = ',')]
    pub requests: Vec<u64>,
    /// Time per run instead of a request count, e.g. 2s (a list is allowed).
    #[arg(long, value_delimiter = ',', value_parser = parse_duration, allow_hyphen_values = true)]
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
    /// Restrict the target to its first N CPUs, or `all` (a dimension).
    /// Default: half the CPUs loadlab may use, the load generator on the
    /// rest, so neither measures the other's CPU time.
    #[arg(long, value_delimiter = ',', value_parser = parse_cpus, value_name = "N|all")]
    pub cpus: Vec<CpuCount>,
    /// Put the load generator on the last N CPUs (default: every CPU the
    /// target was not given); refused when it would share one with it.
    #[arg(long, value_name = "N")]
    pub client_cpus: Option<usize>,
    /// Slow clients held beside the measured client in each cell: none,
    /// header (slowloris), body, read, or a list, e.g. none,header,body,read
    /// (a dimension; the none cell is what the others are compared with).
    #[arg(long, value_delimiter = ',', value_parser = parse_slow)]
    pub slow: Vec<SlowKind>,
    /// Slow connections held in a cell whose --slow is not none.
    #[arg(long, value_name = "N")]
    pub slow_conns: Option<usize>,
    /// Measured runs per configuration (default 3), made in interleaved
    /// rounds: round r of every target before round r+1 of any.
    #[arg(long)]
    pub repeat: Option<usize>,
    /// Shortest time a --duration run lasts (default 1s; 0 = as given).
    /// Runs of a --requests count keep their count.
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true)]
    pub min_time: Option<Duration>,
    /// The target comparisons are made against (one of the -T targets;
    /// default: nginx when present, else the first target).
    #[arg(long)]
    pub baseline: Option<String>,
    /// An earlier sweep's results directory: the report and its findings
    /// compare this sweep with it (as `loadlab compare DIR NEW` would).
    #[arg(long, value_name = "DIR")]
    pub compare_to: Option<std::path::PathBuf>,
    /// Unmeasured warm-up runs of each configuration, before a target's
    /// first round, recorded as warm-ups (0: none at all; not given: one
    /// unrecorded burst of the first run's connections before the first)
    #[arg(long)]
    pub warmup_runs: Option<usize>,
    /// Per-request timeout (default 30s).
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true)]
    pub timeout: Option<Duration>,
    /// The longest one run may take (default 60s): a run still going then
    /// is ended and recorded as failed with what it measured, and that
    /// target's later runs at equal or higher concurrency are skipped.
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true)]
    pub max_cell_time: Option<Duration>,
    /// Do not check the targets' framing and connections before the first
    /// run (the check takes about a second per target; see docs/guide/check.md).
    #[arg(long)]
    pub no_check: bool,
    /// Do not count the servers' syscalls, context switches and ring
    /// submissions. By default each cell is counted with perf counters
    /// (root, or perf_event_paranoid -1) in a short unmeasured pass before
    /// its first run: a quarter of a cell, at most 0.5 s.
    #[arg(long)]
    pub no_accounting: bool,
    /// After the runs, profile each target (perf, root or
    /// perf_event_paranoid 1) in one unmeasured run at its heaviest cell:
    /// a flame graph per target under profiles/, and its top kernel and
    /// user functions in the report's Why section.
    #[arg(long)]
    pub profile: bool,
    /// Load-generator threads (default: one per CPU the load generator
    /// has).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Apply each cell's load as N shards, merged exactly before its row
    /// is written (default: N local `loadlab bench` processes; see
    /// --launcher and docs/guide/distributed.md).
    #[arg(long, value_name = "N")]
    pub shards: Option<u32>,
    // Not a doc comment: clap's help template would read `{n}` as a line break.
    #[arg(long, value_name = "COMMAND", requires = "shards", help = super::reference::placeholders(
        "Start each cell's shards with this command instead: {n} becomes the shard count, \
         {cmd} the bench command (appended when absent); each task finds its shard in \
         SLURM_PROCID/SLURM_NTASKS (or JOB_COMPLETION_INDEX/LOADLAB_SHARDS), \
         e.g. 'srun -n {n} --ntasks-per-node=1'"
    ))]
    pub launcher: Option<String>,
    /// Results directory (default: loadlab-results/<timestamp>/). Runs
    /// already in its raw.csv are not made again: a rerun resumes.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Fail the sweep (exit 3) when a condition holds for any measured
    /// run, as bench's --fail-on, e.g. 'failed>0,p99>10ms'.
    #[arg(long, value_name = "CONDITIONS", value_parser = fail_on::parse)]
    pub fail_on: Vec<Conditions>,
    /// No progress (a bar on a terminal, a line per run otherwise); notes
    /// such as a skipped target are still printed.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

fn parse_slow(s: &str) -> Result<SlowKind, String> {
    s.parse()
}

fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

impl SweepArgs {
    /// Second stage: a preset's plan with explicit flags laid over it, or a
    /// plan from the flags alone.
    pub fn into_plan(self) -> anyhow::Result<(SweepPlan, PathBuf, bool)> {
        let mut plan = match self.preset {
            Some(p) => p.sweep_plan(self.quick).ok_or_else(|| {
                usage(format!(
                    "{p} is not a sweep; it runs through `loadlab stress`"
                ))
            })?,
            None if self.quick => return Err(usage("--quick goes with --preset")),
            None => presets::sweep_plan(),
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
        // Go named on purpose and not there: one line, not a sweep that
        // skips the one target asked for (a preset's Go target is skipped
        // with a note instead).
        let go_named = self
            .targets
            .iter()
            .any(|t| t == "go" || t.starts_with("go:"));
        if go_named && find_go().is_none() {
            anyhow::bail!(go::INSTALL_HINT);
        }
        if !self.concurrency.is_empty() {
            plan.concurrency = self.concurrency.clone();
        } else if !self.rate.is_empty() {
            plan.concurrency = vec![RATE_CONNECTIONS];
        }
        if !self.rate.is_empty() {
            plan.rates = rate_list(&self.rate).map_err(usage)?;
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
        // A url: target names the path to request (url:http://h:p/20KB.html
        // means /20KB.html, not /20KB.html/500B.html).
        if let Some(own) = plan.targets.iter().find_map(TargetSpec::own_path) {
            if !self.path.is_empty() {
                return Err(usage("--path does not go with a url: target, which names its own path (url:http://HOST:PORT/PATH)"));
            }
            if let Some(other) = plan
                .targets
                .iter()
                .filter_map(TargetSpec::own_path)
                .find(|p| *p != own)
            {
                return Err(usage(format!("url: targets name different paths ({own} and {other}); give each its own sweep")));
            }
            plan.paths = vec![own.to_string()];
        }
        if !self.path.is_empty() {
            if let Some(p) = self.path.iter().find(|p| !p.starts_with('/')) {
                return Err(usage(format!("--path '{p}' must start with /")));
            }
            plan.paths = self.path.clone();
        }
        if !self.workers.is_empty() {
            for (&w, t) in self
                .workers
                .iter()
                .flat_map(|w| plan.targets.iter().map(move |t| (w, t)))
            {
                t.check_workers(w)
                    .map_err(|e| usage(format!("--workers {w} for {t}: {e}")))?;
            }
            plan.workers = self.workers.iter().map(|&w| Some(w)).collect();
        }
        cpus::apply(&mut plan, &self.cpus, self.client_cpus)?;
        self.slow_into(&mut plan)?;
        if let Some(r) = self.repeat {
            if r == 0 {
                return Err(usage("--repeat must be at least 1"));
            }
            plan.repeat = r;
        }
        if let Some(w) = self.warmup_runs {
            plan.warmup_runs = w;
            plan.host_warmup = false;
        }
        if let Some(m) = self.min_time {
            plan.min_time = m;
        }
        if let Some(b) = &self.baseline {
            let named = |t: &TargetSpec| t.to_string() == *b || b.parse().ok().as_ref() == Some(t);
            if !plan.targets.iter().any(named) {
                let names: Vec<String> = plan.targets.iter().map(|t| t.to_string()).collect();
                return Err(usage(format!(
                    "--baseline {b} is not one of the targets ({})",
                    names.join(", ")
                )));
            }
        }
        if let Some(t) = self.timeout {
            if t.is_zero() {
                return Err(usage("--timeout must be greater than 0"));
            }
            plan.timeout = t;
        }
        plan.check = !self.no_check;
        plan.accounting = !self.no_accounting;
        plan.profile = self.profile;
        if let Some(t) = self.max_cell_time {
            if t.is_zero() {
                return Err(usage("--max-cell-time must be greater than 0"));
            }
            plan.max_cell_time = t;
        }
        if self.threads == Some(0) {
            return Err(usage("--threads must be at least 1"));
        }
        plan.threads = self.threads;
        let flags = CapacityFlags {
            capacity: self.capacity,
            slo: self.slo,
            shards: self.shards.is_some(),
            concurrency: &self.concurrency,
            duration: &self.duration,
            rates: !self.rate.is_empty(),
        };
        capacity_into(&flags, &mut plan)?;
        let out = self.out.clone().unwrap_or_else(execute::default_out_dir);
        if let Some(count) = self.shards {
            let sp = ShardPlan {
                count,
                launcher: self.launcher.clone(),
                files_in: out.clone(),
            };
            let least = plan.concurrency.iter().copied().min().unwrap_or(0);
            shards::check(&sp, least).map_err(usage)?;
            plan.shards = Some(sp);
        }
        Ok((plan, out, self.quiet))
    }
}

impl SweepArgs {
    /// `--slow` and `--slow-conns` laid over the plan: a slow attack needs
    /// at least one connection, the connections need an attack, and they
    /// must fit in the open-file limit beside the largest concurrency.
    fn slow_into(&self, plan: &mut SweepPlan) -> anyhow::Result<()> {
        if !self.slow.is_empty() {
            let mut seen = Vec::new();
            for &a in &self.slow {
                if seen.contains(&a) {
                    return Err(usage(format!("--slow names {a} twice")));
                }
                seen.push(a);
            }
            plan.slow = seen;
        }
        if let Some(n) = self.slow_conns {
            plan.slow_conns = n;
        }
        let attacks = plan.slow.iter().any(|a| !a.is_none());
        match (attacks, plan.slow_conns) {
            (true, 0) => {
                return Err(usage(
                    "--slow header, body or read needs --slow-conns of at least 1",
                ))
            }
            (false, n) if n > 0 && self.slow_conns.is_some() => {
                return Err(usage("--slow-conns goes with --slow header, body or read"))
            }
            _ => {}
        }
        if attacks {
            let c = plan.concurrency.iter().copied().max().unwrap_or(0);
            crate::bench::ensure_fd_limit(c + plan.slow_conns)
                .map_err(|e| usage(format!("--slow-conns {}: {}", plan.slow_conns, e.0)))?;
        }
        Ok(())
    }
}

/// `given` holds the flags of the command line, to refuse the ones a
/// stress preset does not take.
pub fn run(args: SweepArgs, given: &ArgMatches) -> anyhow::Result<()> {
    if let Some(p) = args.preset.filter(|p| p.kind() == PresetKind::Stress) {
        return run_stress_preset(p, args, given);
    }
    let baseline = args.baseline.clone();
    let compare_to = args
        .compare_to
        .as_deref()
        .map(super::compare::earlier_run)
        .transpose()?;
    let fail_on = Conditions::join(&args.fail_on);
    if fail_on.names(fail_on::Metric::Violations) {
        return Err(usage(
            "--fail-on: violations is a bench metric; a sweep's rows do not record violations yet",
        ));
    }
    let (plan, out, quiet) = args.into_plan()?;
    let info = SweepInfo {
        command: command_line(std::env::args()),
        baseline,
        shards: plan.shards.as_ref().map(|s| s.count),
        launcher: plan.shards.as_ref().and_then(|s| s.launcher.clone()),
        compare_to,
        ..SweepInfo::default()
    };
    let outcome = execute(&plan, &out, info, quiet)?;
    exit_if_interrupted(&outcome);
    fail_if_nothing_usable(&outcome)?;
    let held = fail_on.held_in_rows(&outcome.rows);
    match held.is_empty() {
        true => Ok(()),
        false => Err(super::exit::Exit::conditions_held(&held)),
    }
}

/// A sweep whose runs all failed, or got not one 2xx answer, measured
/// nothing: its table and report are written (they say what failed), and
/// the exit status is 1 with one line, as for bench. A resumed sweep that
/// had nothing left to run is not a failure.
pub(super) fn fail_if_nothing_usable(outcome: &SweepOutcome) -> anyhow::Result<()> {
    let made: Vec<&RawRow> = outcome.rows.iter().filter(|r| !r.is_skip()).collect();
    // ab's counts: a 2xx answer is one that neither failed nor was non-2xx.
    let usable = |r: &RawRow| r.is_measured() && r.complete > r.failed + r.non_2xx;
    if made.is_empty() || made.iter().any(|r| usable(r)) {
        return Ok(());
    }
    let failed = made.iter().filter(|r| r.is_failed()).count();
    anyhow::bail!(
        "the sweep measured nothing usable: of its {} run(s), {failed} could not be made and none got a 2xx answer (see the table above and raw.csv)",
        made.len()
    )
}

/// After Ctrl-C, with the report written and printed: exit with
/// [`INTERRUPTED_EXIT`] rather than 0.
pub(super) fn exit_if_interrupted(outcome: &SweepOutcome) {
    if outcome.interrupted {
        let _ = std::io::stdout().flush();
        std::process::exit(INTERRUPTED_EXIT);
    }
}

/// A stress preset (E2, the file-transfer matrix) runs through `loadlab
/// stress`; sweep flags that would silently not apply to it are refused.
fn run_stress_preset(preset: Preset, args: SweepArgs, given: &ArgMatches) -> anyhow::Result<()> {
    const TAKEN: [&str; 4] = ["preset", "quick", "out", "quiet"];
    let cmd = SweepArgs::augment_args(clap::Command::new("sweep"));
    let refused: Vec<String> = cmd
        .get_arguments()
        .filter(|a| !TAKEN.contains(&a.get_id().as_str()))
        .filter(|a| given.value_source(a.get_id().as_str()) == Some(ValueSource::CommandLine))
        .map(|a| match a.get_long() {
            Some(l) => format!("--{l}"),
            None => a.get_id().to_string(),
        })
        .collect();
    if !refused.is_empty() {
        return Err(usage(format!(
            "--preset {preset} runs `loadlab stress --preset {preset}`, which takes no {}; use loadlab stress's own flags",
            refused.join(", ")
        )));
    }
    let out = args.out.unwrap_or_else(execute::default_out_dir);
    super::stress::run_preset(preset, args.quick, args.quiet, out)
}

/// The command line as a shell would take it back: arguments with
/// anything but safe characters in single quotes.
fn command_line(args: impl Iterator<Item = String>) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    args.enumerate()
        .map(|(i, a)| match i {
            // argv[0] as the user would type it.
            0 => Path::new(&a)
                .file_name()
                .map_or(a.clone(), |n| n.to_string_lossy().into_owned()),
            _ if !a.is_empty() && a.chars().all(safe) => a,
            _ => format!("'{}'", a.replace('\'', "'\\''")),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs a plan with progress, renders the report, prints the summary
/// table of everything raw.csv holds (earlier runs of a resumed sweep
/// too).
pub fn execute(
    plan: &SweepPlan,
    out: &Path,
    info: SweepInfo,
    quiet: bool,
) -> anyhow::Result<SweepOutcome> {
    let shutdown = Shutdown::from_signals()?;
    let stop = || shutdown.is_set();
    let mut progress = SweepProgress::new(quiet);
    let outcome = execute::run(plan, out, info, &stop, &mut |e| progress.event(e))?;
    if let Some(b) = &progress.bar {
        b.finish_and_clear();
    }
    progress.explain_flags(&outcome.rows);
    // raw.csv is read once for both the report and the terminal table.
    let inputs = crate::report::load(out)?;
    crate::report::render(out, &inputs)?;
    let mut stdout = std::io::stdout().lock();
    write!(stdout, "{}", crate::report::terminal::sweep_table(&inputs))?;
    if outcome.interrupted {
        let kept = outcome.rows.iter().filter(|r| r.is_measured()).count();
        say(&format!(
            "loadlab: interrupted; the run in progress was not recorded, {kept} run{} of this sweep kept",
            if kept == 1 { "" } else { "s" }
        ));
    }
    writeln!(stdout, "\nReport: {}", out.join("index.html").display())?;
    stdout.flush()?;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::slow::SlowKind::{Body, Header, None as Alone};

    fn plan_of(slow: &[SlowKind], conns: Option<usize>) -> anyhow::Result<SweepPlan> {
        let args = SweepArgs {
            targets: vec!["model:event-loop".into()],
            slow: slow.to_vec(),
            slow_conns: conns,
            ..SweepArgs::default()
        };
        args.into_plan().map(|(plan, _, _)| plan)
    }

    #[test]
    fn slow_flags_set_the_dimension_and_bad_ones_get_one_line() {
        let plain = plan_of(&[], None).unwrap();
        assert_eq!((plain.slow.as_slice(), plain.slow_conns), (&[Alone][..], 0));
        let p = plan_of(&[Alone, Header, Body], Some(50)).unwrap();
        assert_eq!(
            (p.slow.as_slice(), p.slow_conns),
            (&[Alone, Header, Body][..], 50)
        );
        assert_eq!(p.runs(), 3 * plain.runs());
        for (slow, conns, says) in [
            (&[Header][..], None, "needs --slow-conns"),
            (&[Header][..], Some(0), "needs --slow-conns"),
            (&[][..], Some(10), "goes with --slow"),
            (&[Alone][..], Some(10), "goes with --slow"),
            (&[Header, Header][..], Some(10), "names header twice"),
            (&[Body][..], Some(10_000_000), "--slow-conns 10000000: "),
        ] {
            let e = plan_of(slow, conns).unwrap_err();
            assert!(e.is::<UsageError>(), "{e}");
            let text = e.to_string();
            assert!(
                text.contains(says) && !text.contains('\n'),
                "{slow:?} {conns:?}: {text}"
            );
        }
        assert!(parse_slow("slowloris").unwrap_err().contains("'slowloris'"));
    }

    #[test]
    fn rates_are_a_dimension_carried_by_50_connections_unless_told() {
        let args = |concurrency: Vec<usize>| SweepArgs {
            targets: vec!["model:event-loop".into()],
            rate: vec![2000.0, 1000.0],
            concurrency,
            ..SweepArgs::default()
        };
        let (p, _, _) = args(vec![]).into_plan().unwrap();
        assert_eq!(p.concurrency, [RATE_CONNECTIONS]);
        assert_eq!(p.rates, [Some(1000.0), Some(2000.0)]);
        assert_eq!(args(vec![8]).into_plan().unwrap().0.concurrency, [8]);
    }
}
