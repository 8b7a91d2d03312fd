//! Planning a sweep: which target instances to start, which runs to make
//! against each and in which order, decided from the plan and the runs
//! raw.csv already holds before the first run, so the total is right from
//! the start. Repeats are interleaved: every instance runs for the whole
//! sweep, and round r of every one comes before round r + 1 of any, so a
//! slow minute of the host lands on every target alike instead of on one.
//! No processes and no IO here: tests check schedules directly.

use std::collections::HashSet;
use std::time::Duration;

use crate::catalog::slow::SlowKind;
use crate::proc::target::TargetSpec;
use crate::results::config::{Configured, RunConfig};
use crate::results::raw::RawRow;

/// How much load one run applies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    Requests(u64),
    Duration(Duration),
}

impl Load {
    /// The requests and duration a run records: what the plan asked for,
    /// so that one `--requests` value is one configuration at every
    /// concurrency (bench makes at least one request per connection;
    /// `complete` says how many were made).
    fn fields(self) -> (u64, f64) {
        match self {
            Load::Requests(n) => (n, 0.0),
            Load::Duration(d) => (0, d.as_secs_f64()),
        }
    }

    /// The load a run gets when time-limited runs last at least `min`: a
    /// request count is the experiment's definition and stays.
    pub fn at_least(self, min: Duration) -> Load {
        match self {
            Load::Duration(d) => Load::Duration(d.max(min)),
            requests => requests,
        }
    }
}

/// The dimensions of a sweep; every list is iterated in full.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    pub experiment: String,
    pub targets: Vec<TargetSpec>,
    pub concurrency: Vec<usize>,
    /// Offered rates (requests/s, open loop); `None` alone for a
    /// closed-loop sweep.
    pub rates: Vec<Option<f64>>,
    pub loads: Vec<Load>,
    pub keepalive: Vec<bool>,
    pub paths: Vec<String>,
    /// None = the target's own default.
    pub workers: Vec<Option<usize>>,
    /// None = not restricted. By default half the CPUs loadlab may use
    /// (`affinity::default_split`), the load generator on the others.
    pub cpus: Vec<Option<usize>>,
    /// `cpus` was asked for (flag or preset), not the default split: a
    /// target it cannot apply to is then worth a note.
    pub cpus_asked: bool,
    /// `--client-cpus N`: the load generator on the last N CPUs (None:
    /// every CPU the target was not given).
    pub client_cpus: Option<usize>,
    /// Slow-client conditions each cell is measured under (`none` alone
    /// for a plain sweep); the none cell is what the others are paired
    /// with.
    pub slow: Vec<SlowKind>,
    /// Slow connections held during a cell whose attack is not none.
    pub slow_conns: usize,
    /// Measured runs of every configuration, made in interleaved rounds.
    pub repeat: usize,
    /// Runs of each configuration before an instance's first measured
    /// round, recorded as warm-up and left out of summaries.
    pub warmup_runs: usize,
    /// Without `warmup_runs`, one unrecorded run like the sweep's first
    /// before it (see `execute`); off when `--warmup-runs` is given, 0
    /// included, so a cold start can still be measured.
    pub host_warmup: bool,
    /// The shortest a time-limited run lasts (`--min-time`): CPU figures
    /// and rates over a few milliseconds are noise.
    pub min_time: Duration,
    pub timeout: Duration,
    /// The longest one run may take (`--max-cell-time`): a server that
    /// makes no progress ends its run there, and its later runs at equal
    /// or higher concurrency are not made.
    pub max_cell_time: Duration,
    /// Check each target's framing and connections briefly before its
    /// first run (`--no-check` turns it off).
    pub check: bool,
    /// Load-generator threads (None: one per client CPU); per shard with
    /// `shards` (None: each shard's default).
    pub threads: Option<usize>,
    /// Each cell's load as shards through a launcher (`--shards`); None:
    /// this process applies it.
    pub shards: Option<super::shards::ShardPlan>,
    /// `--capacity`: search each target's capacity before the cells (and,
    /// with no cells asked for, instead of them).
    pub capacity: Option<super::capacity::settings::CapacityPlan>,
    /// With `capacity`: the cells are made too (`--rate` given, or the
    /// bare run's common rate); otherwise the search is the whole sweep.
    pub cells: bool,
    /// Count each cell's server syscalls, context switches and ring
    /// submissions with perf counters in an unmeasured pass before its
    /// first run, where the host allows it (off: `--no-accounting`).
    pub accounting: bool,
    /// `--profile`: after the runs, one unmeasured run per target with
    /// perf sampling it, drawn as a flame graph.
    pub profile: bool,
}

impl SweepPlan {
    /// Number of bench runs the full plan has, before runs already in
    /// raw.csv, targets left out and dimensions that do not apply to a
    /// target are taken off (`SweepEvent::Planned` has the real count).
    pub fn runs(&self) -> usize {
        self.targets.len()
            * self.workers.len()
            * self.cpus.len()
            * self.paths.len()
            * self.keepalive.len()
            * self.loads.len()
            * self.concurrency.len()
            * self.rates.len()
            * self.slow.len()
            * (self.repeat + self.warmup_runs)
    }
}

/// One run to make: its full configuration, which repeat (the round it is
/// made in), and whether it is a warm-up. The row it records is built from this, and so is the key
/// that tells a resumed sweep it was made, so the two cannot drift apart.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRun {
    pub config: RunConfig,
    pub load: Load,
    pub repeat: u64,
    pub warmup: bool,
}

/// What identifies a run in raw.csv for resuming: a row with the same key
/// and no error means the run was made.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RunKey {
    config: RunConfig,
    repeat: u64,
    warmup: bool,
}

impl RunKey {
    fn of_row(r: &RawRow) -> RunKey {
        RunKey {
            config: r.run_config(),
            repeat: r.repeat,
            warmup: r.warmup,
        }
    }

    fn of_run(p: &PlannedRun) -> RunKey {
        RunKey {
            config: p.config.clone(),
            repeat: p.repeat,
            warmup: p.warmup,
        }
    }
}

/// One target instance to start: a target with one worker count and one
/// CPU restriction, and the runs to make against it.
#[derive(Debug)]
pub struct Instance<'a> {
    pub spec: &'a TargetSpec,
    pub workers: Option<usize>,
    pub cpus: Option<usize>,
    /// The configuration fields the instance fixes (experiment, target,
    /// workers, CPUs); a row for the instance as a whole starts from it.
    pub config: RunConfig,
    pub runs: Vec<PlannedRun>,
}

/// The whole sweep as decided before its first run.
#[derive(Debug, Default)]
pub struct Schedule<'a> {
    /// Started once each, before the first run, and kept running.
    pub instances: Vec<Instance<'a>>,
    /// The order runs are made in: (instance, run) indices into
    /// `instances`, round by round.
    pub order: Vec<(usize, usize)>,
    /// Targets left out because what they run is not installed (nginx,
    /// go), with the configuration their skip row records, the runs they
    /// would have made and why.
    pub skipped: Vec<Skipped>,
    /// Lines for the user: dimensions that do not apply to a target.
    pub notes: Vec<String>,
    /// Measured runs of the plan that raw.csv already holds.
    pub already_done: usize,
}

impl Schedule<'_> {
    pub fn runs(&self) -> usize {
        self.instances.iter().map(|i| i.runs.len()).sum()
    }
}

/// A target left out: the configuration its skip row records, the runs it
/// would have made, and why (an install hint).
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub config: RunConfig,
    pub runs: usize,
    pub why: &'static str,
}

/// Which reference servers the machine has; a target whose server is
/// missing is skipped, not failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Installed {
    pub nginx: bool,
    pub go: bool,
}

impl Installed {
    /// Every reference server present.
    pub const ALL: Installed = Installed {
        nginx: true,
        go: true,
    };

    /// Why `spec` cannot run here, or None when it can.
    pub fn missing(self, spec: &TargetSpec) -> Option<&'static str> {
        match spec {
            TargetSpec::Nginx { .. } if !self.nginx => Some(crate::proc::nginx::INSTALL_HINT),
            TargetSpec::Go { .. } if !self.go => Some(crate::proc::go::INSTALL_HINT),
            _ => None,
        }
    }
}

/// Decides every instance and run of `plan`, given the rows raw.csv holds
/// and which reference servers are installed.
pub fn schedule<'a>(
    plan: &'a SweepPlan,
    existing: &[RawRow],
    installed: Installed,
) -> Schedule<'a> {
    let done: HashSet<RunKey> = existing
        .iter()
        .filter(|r| r.is_measured())
        .map(RunKey::of_row)
        .collect();
    let mut s = Schedule::default();
    let mut seen: HashSet<(String, u64, u64)> = HashSet::new();
    let sized = plan.workers.iter().any(Option::is_some);
    for spec in &plan.targets {
        let missing = installed.missing(spec);
        let (workers_list, cpus_list) = applicable(plan, spec, &mut s.notes);
        let (mut spec_runs, mut merged) = (0, false);
        for &workers in &workers_list {
            for &cpus in &cpus_list {
                let config = RunConfig {
                    experiment: plan.experiment.clone(),
                    target: spec.to_string(),
                    workers: spec.workers(workers) as u64,
                    cpus: cpus.unwrap_or(0) as u64,
                    ..RunConfig::default()
                };
                if !seen.insert((config.target.clone(), config.workers, config.cpus)) {
                    merged = true;
                    continue;
                }
                let runs = runs_to_do(plan, &config, &done, &mut s.already_done);
                spec_runs += runs.len();
                if !runs.is_empty() && missing.is_none() {
                    s.instances.push(Instance {
                        spec,
                        workers,
                        cpus,
                        config,
                        runs,
                    });
                }
            }
        }
        if merged && sized && spec.takes_workers() {
            s.notes.push(format!(
                "{spec} has a fixed worker count: measured once, not once per --workers value"
            ));
        }
        if let (Some(why), true) = (missing, spec_runs > 0) {
            let config = RunConfig {
                experiment: plan.experiment.clone(),
                target: spec.to_string(),
                workers: spec.workers(None) as u64,
                ..RunConfig::default()
            };
            s.skipped.push(Skipped {
                config,
                runs: spec_runs,
                why,
            });
        }
    }
    for &load in &plan.loads {
        if let (Load::Duration(d), true) = (load, load.at_least(plan.min_time) != load) {
            s.notes.push(format!(
                "--duration {} s is shorter than --min-time {} s: those runs last {} s",
                d.as_secs_f64(),
                plan.min_time.as_secs_f64(),
                plan.min_time.as_secs_f64()
            ));
        }
    }
    s.notes.dedup();
    s.order = interleave(&s.instances);
    s
}

/// Round by round, every instance in turn: its warm-up runs in front of
/// its first measured round (a resumed sweep's may be round 2), then that
/// round's runs. Even rounds take the instances in reverse: in a fixed
/// order every target holds the same place in each round, so whatever a
/// place carries (what ran just before it, the machine's drift across a
/// round) falls on the same target every time, and no number of repeats
/// averages it out.
fn interleave(instances: &[Instance]) -> Vec<(usize, usize)> {
    fn rounds<'r>(i: &'r Instance) -> impl Iterator<Item = u64> + 'r {
        i.runs.iter().filter(|r| !r.warmup).map(|r| r.repeat)
    }
    let last = instances.iter().flat_map(rounds).max().unwrap_or(0);
    let first: Vec<u64> = instances
        .iter()
        .map(|i| rounds(i).min().unwrap_or(0))
        .collect();
    let mut order = Vec::new();
    for round in 1..=last {
        let mut turn: Vec<usize> = (0..instances.len()).collect();
        if round % 2 == 0 {
            turn.reverse();
        }
        for i in turn {
            let inst = &instances[i];
            for (j, run) in inst.runs.iter().enumerate() {
                let run_round = if run.warmup { first[i] } else { run.repeat };
                if run_round == round {
                    order.push((i, j));
                }
            }
        }
    }
    order
}

/// The worker counts and CPU restrictions that apply to `spec`. One that
/// does not apply would measure the same thing several times under
/// different labels: the target runs once, and a note says so.
fn applicable(
    plan: &SweepPlan,
    spec: &TargetSpec,
    notes: &mut Vec<String>,
) -> (Vec<Option<usize>>, Vec<Option<usize>>) {
    // The default split is not worth a note where it cannot apply.
    let mut only_if = |applies: bool, values: &[Option<usize>], asked: bool, note: String| {
        if applies {
            return values.to_vec();
        }
        if values.iter().any(Option::is_some) && asked {
            notes.push(note);
        }
        vec![None]
    };
    let cpus = only_if(
        spec.started_here(),
        &plan.cpus,
        plan.cpus_asked,
        format!("--cpus does not apply to {spec} (loadlab does not start it): it runs unrestricted, once"),
    );
    let workers = only_if(
        spec.takes_workers(),
        &plan.workers,
        true,
        format!("--workers does not apply to {spec}: it runs as it was started, once"),
    );
    (workers, cpus)
}

/// The runs of one target instance still to make: warm-up runs first,
/// then the measured ones. A configuration whose measured repeats are all
/// in raw.csv is skipped whole; otherwise its warm-up runs are made again
/// (the target is a fresh process, which is what warm-up is for) and then
/// only the missing repeats.
fn runs_to_do(
    plan: &SweepPlan,
    instance: &RunConfig,
    done: &HashSet<RunKey>,
    already_done: &mut usize,
) -> Vec<PlannedRun> {
    let (mut warmups, mut out) = (Vec::new(), Vec::new());
    // Loads shorter than --min-time become the same load: measured once.
    let mut loads: Vec<Load> = Vec::new();
    for l in plan.loads.iter().map(|l| l.at_least(plan.min_time)) {
        if !loads.contains(&l) {
            loads.push(l);
        }
    }
    for path in &plan.paths {
        for &keepalive in &plan.keepalive {
            for (&load, &rate) in loads
                .iter()
                .flat_map(|l| plan.rates.iter().map(move |r| (l, r)))
            {
                // Slow conditions innermost: a cell and the same client
                // alone are made one after the other, in the same round.
                for (c, slow) in plan
                    .concurrency
                    .iter()
                    .flat_map(|&c| plan.slow.iter().map(move |&s| (c, s)))
                {
                    let (requests, duration_s) = load.fields();
                    let config = RunConfig {
                        path: path.clone(),
                        concurrency: c as u64,
                        requests,
                        duration_s,
                        keepalive,
                        rate,
                        slow,
                        slow_conns: if slow.is_none() {
                            0
                        } else {
                            plan.slow_conns as u64
                        },
                        ..instance.clone()
                    };
                    let run = |repeat: usize, warmup: bool| PlannedRun {
                        config: config.clone(),
                        load,
                        repeat: repeat as u64,
                        warmup,
                    };
                    let missing: Vec<PlannedRun> = (1..=plan.repeat)
                        .map(|r| run(r, false))
                        .filter(|p| !done.contains(&RunKey::of_run(p)))
                        .collect();
                    *already_done += plan.repeat - missing.len();
                    if missing.is_empty() {
                        continue;
                    }
                    warmups.extend((1..=plan.warmup_runs).map(|w| run(w, true)));
                    out.extend(missing);
                }
            }
        }
    }
    warmups.extend(out);
    warmups
}

#[cfg(test)]
mod tests;
