//! Planning a sweep: which target instances to start, which runs to make
//! against each and in which order, decided from the plan and the runs
//! raw.csv already holds before the first run, so the total is right from
//! the start. Repeats are interleaved: every instance runs for the whole
//! sweep, and round r of every one comes before round r + 1 of any, so a
//! slow minute of the host lands on every target alike instead of on one.
//! No processes and no IO here: tests check schedules directly.

use std::collections::HashSet;
use std::time::Duration;

use super::target::TargetSpec;
use crate::results::config::{Configured, RunConfig};
use crate::results::raw::RawRow;
use crate::results::slow::SlowAttack;

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
    pub loads: Vec<Load>,
    pub keepalive: Vec<bool>,
    pub paths: Vec<String>,
    /// None = the target's own default.
    pub workers: Vec<Option<usize>>,
    /// None = not restricted.
    pub cpus: Vec<Option<usize>>,
    /// Slow-client conditions each cell is measured under (`none` alone
    /// for a plain sweep); the none cell is what the others are paired
    /// with.
    pub slow: Vec<SlowAttack>,
    /// Slow connections held during a cell whose attack is not none.
    pub slow_conns: usize,
    /// Measured runs of every configuration, made in interleaved rounds.
    pub repeat: usize,
    /// Runs of each configuration before an instance's first measured
    /// round, recorded as warm-up and left out of summaries.
    pub warmup_runs: usize,
    /// The shortest a time-limited run lasts (`--min-time`): CPU figures
    /// and rates over a few milliseconds are noise.
    pub min_time: Duration,
    pub timeout: Duration,
    /// Load-generator threads (None: one per core).
    pub threads: Option<usize>,
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
/// round's runs.
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
        for (i, inst) in instances.iter().enumerate() {
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
    let mut only_if = |applies: bool, values: &[Option<usize>], note: String| {
        if applies {
            return values.to_vec();
        }
        if values.iter().any(Option::is_some) {
            notes.push(note);
        }
        vec![None]
    };
    let cpus = only_if(
        spec.started_here(),
        &plan.cpus,
        format!("--cpus does not apply to {spec} (loadlab does not start it): it runs unrestricted, once"),
    );
    let workers = only_if(
        spec.takes_workers(),
        &plan.workers,
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
            for &load in &loads {
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
mod tests {
    use super::*;
    use crate::results::models::Model;

    fn plan() -> SweepPlan {
        SweepPlan {
            experiment: "sweep".into(),
            targets: vec![
                TargetSpec::Model {
                    model: Model::EventLoop,
                    workers: None,
                },
                TargetSpec::Nginx { workers: Some(1) },
            ],
            concurrency: vec![1, 10],
            loads: vec![Load::Requests(100)],
            keepalive: vec![false],
            paths: vec!["/".into()],
            workers: vec![None],
            cpus: vec![None],
            slow: vec![SlowAttack::None],
            slow_conns: 0,
            repeat: 2,
            warmup_runs: 1,
            min_time: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            threads: None,
        }
    }

    /// (instance, repeat, warm-up) of each run, in the order made.
    fn made(s: &Schedule) -> Vec<(usize, u64, bool)> {
        s.order
            .iter()
            .map(|&(i, j)| {
                let r = &s.instances[i].runs[j];
                (i, r.repeat, r.warmup)
            })
            .collect()
    }

    #[test]
    fn every_run_is_planned_with_warmups_first() {
        let p = plan();
        let s = schedule(&p, &[], Installed::ALL);
        assert_eq!(s.instances.len(), 2);
        assert_eq!(s.runs(), 2 * 2 * 3);
        assert_eq!(s.order.len(), s.runs(), "every run once");
        let reps: Vec<(u64, bool)> = s.instances[0]
            .runs
            .iter()
            .map(|r| (r.repeat, r.warmup))
            .collect();
        // Both concurrency levels' warm-ups, then their repeats.
        assert_eq!(
            reps,
            [
                (1, true),
                (1, true),
                (1, false),
                (2, false),
                (1, false),
                (2, false)
            ]
        );
        assert!(s.skipped.is_empty());
    }

    #[test]
    fn round_r_of_every_instance_comes_before_round_r_plus_1_of_any() {
        let p = plan();
        let s = schedule(&p, &[], Installed::ALL);
        let made = made(&s);
        // Instance 0: warm-ups and round 1, instance 1 likewise, then round
        // 2 of each, two concurrency levels per round.
        let want: Vec<(usize, u64, bool)> = [
            [(0, 1, true); 2],
            [(0, 1, false); 2],
            [(1, 1, true); 2],
            [(1, 1, false); 2],
            [(0, 2, false); 2],
            [(1, 2, false); 2],
        ]
        .concat();
        assert_eq!(made, want);
    }

    #[test]
    fn a_resumed_sweep_warms_up_before_its_first_missing_round() {
        let p = plan();
        let first = schedule(&p, &[], Installed::ALL);
        // Round 1 of instance 0 is in raw.csv.
        let rows: Vec<RawRow> = first.instances[0]
            .runs
            .iter()
            .filter(|r| !r.warmup && r.repeat == 1)
            .map(|r| {
                let mut row = RawRow {
                    repeat: 1,
                    ..RawRow::default()
                };
                row.set_run_config(&r.config);
                row
            })
            .collect();
        let s = schedule(&p, &rows, Installed::ALL);
        let made = made(&s);
        let want: Vec<(usize, u64, bool)> = [
            [(1, 1, true); 2],
            [(1, 1, false); 2],
            [(0, 1, true); 2],
            [(0, 2, false); 2],
            [(1, 2, false); 2],
        ]
        .concat();
        assert_eq!(made, want);
    }

    #[test]
    fn time_limited_runs_last_at_least_min_time_and_counts_stay() {
        let mut p = plan();
        p.loads = vec![
            Load::Duration(Duration::from_millis(200)),
            Load::Duration(Duration::from_millis(500)),
            Load::Duration(Duration::from_secs(2)),
            Load::Requests(10),
        ];
        let s = schedule(&p, &[], Installed::ALL);
        let mut loads: Vec<(u64, f64)> = s.instances[0]
            .runs
            .iter()
            .map(|r| (r.config.requests, r.config.duration_s))
            .collect();
        loads.dedup();
        loads.sort_by(|a, b| a.partial_cmp(b).unwrap());
        loads.dedup();
        // 200 ms and 500 ms both become one 1 s configuration.
        assert_eq!(loads, [(0, 1.0), (0, 2.0), (10, 0.0)]);
        assert!(
            s.notes.iter().any(|n| n.contains("--duration 0.2 s")),
            "{:?}",
            s.notes
        );
        p.min_time = Duration::ZERO;
        let s = schedule(&p, &[], Installed::ALL);
        assert!(s.instances[0]
            .runs
            .iter()
            .any(|r| r.config.duration_s == 0.2));
        assert!(s.notes.is_empty(), "{:?}", s.notes);
    }

    #[test]
    fn recorded_runs_are_not_made_again() {
        let p = plan();
        let first = schedule(&p, &[], Installed::ALL);
        let rows: Vec<RawRow> = first.instances[0]
            .runs
            .iter()
            .filter(|r| !r.warmup && r.config.concurrency == 1)
            .map(|r| {
                let mut row = RawRow {
                    repeat: r.repeat,
                    ..RawRow::default()
                };
                row.set_run_config(&r.config);
                row
            })
            .collect();
        let again = schedule(&p, &rows, Installed::ALL);
        assert_eq!(again.already_done, 2);
        assert_eq!(again.runs(), first.runs() - 3);
    }

    #[test]
    fn slow_conditions_run_innermost_and_none_holds_no_connections() {
        let mut p = plan();
        p.slow = vec![SlowAttack::None, SlowAttack::Header];
        p.slow_conns = 2000;
        p.warmup_runs = 0;
        let s = schedule(&p, &[], true);
        assert_eq!(s.runs(), p.runs());
        let cells: Vec<(u64, SlowAttack, u64, u64)> = s.instances[0]
            .runs
            .iter()
            .map(|r| {
                (
                    r.config.concurrency,
                    r.config.slow,
                    r.config.slow_conns,
                    r.repeat,
                )
            })
            .collect();
        let (none, header) = (SlowAttack::None, SlowAttack::Header);
        assert_eq!(
            cells,
            [
                (1, none, 0, 1),
                (1, none, 0, 2),
                (1, header, 2000, 1),
                (1, header, 2000, 2),
                (10, none, 0, 1),
                (10, none, 0, 2),
                (10, header, 2000, 1),
                (10, header, 2000, 2),
            ]
        );
        // Round 1 makes each cell and its none cell one after the other.
        let first: Vec<SlowAttack> = made(&s)
            .iter()
            .zip(&s.order)
            .filter(|((i, rep, _), _)| *i == 0 && *rep == 1)
            .map(|(_, &(i, j))| s.instances[i].runs[j].config.slow)
            .collect();
        assert_eq!(first, [none, header, none, header]);
    }

    #[test]
    fn missing_nginx_is_skipped_with_its_runs() {
        let p = plan();
        let no_nginx = Installed {
            nginx: false,
            ..Installed::ALL
        };
        let s = schedule(&p, &[], no_nginx);
        assert_eq!(s.instances.len(), 1);
        assert_eq!(s.skipped.len(), 1);
        assert_eq!(s.skipped[0].config.target, "nginx:workers=1");
        assert_eq!(s.skipped[0].runs, 6);
        assert_eq!(s.skipped[0].why, crate::proc::nginx::INSTALL_HINT);
    }

    #[test]
    fn missing_go_is_skipped_with_its_runs_and_says_golang_go() {
        let mut p = plan();
        p.targets.push(TargetSpec::Go { workers: None });
        let no_go = Installed {
            go: false,
            ..Installed::ALL
        };
        let s = schedule(&p, &[], no_go);
        assert_eq!(s.instances.len(), 2, "the model and nginx still run");
        assert_eq!(s.skipped.len(), 1);
        assert_eq!(s.skipped[0].config.target, "go");
        assert_eq!(s.skipped[0].runs, 6);
        assert!(s.skipped[0].why.contains("apt-get install golang-go"));
        assert_eq!(schedule(&p, &[], Installed::ALL).instances.len(), 3);
    }
}
