//! Planning a sweep: which target instances to start and which runs to make
//! against each, decided from the plan and the runs raw.csv already holds
//! before the first run, so the total is right from the start. No
//! processes and no IO here: tests check schedules directly.

use std::collections::HashSet;
use std::time::Duration;

use super::target::TargetSpec;
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
    pub repeat: usize,
    /// Runs before the measured repeats of each configuration, recorded as
    /// warm-up and left out of summaries.
    pub warmup_runs: usize,
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
            * (self.repeat + self.warmup_runs)
    }
}

/// One run to make: its full configuration, which repeat, and whether it
/// is a warm-up. The row it records is built from this, and so is the key
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
    pub instances: Vec<Instance<'a>>,
    /// Targets left out because nginx is not installed, with the runs
    /// they would have made and the configuration their skip row records.
    pub skipped: Vec<(RunConfig, usize)>,
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

/// Decides every instance and run of `plan`, given the rows raw.csv holds
/// and whether nginx is installed.
pub fn schedule<'a>(plan: &'a SweepPlan, existing: &[RawRow], nginx: bool) -> Schedule<'a> {
    let done: HashSet<RunKey> = existing
        .iter()
        .filter(|r| r.is_measured())
        .map(RunKey::of_row)
        .collect();
    let mut s = Schedule::default();
    let mut seen: HashSet<(String, u64, u64)> = HashSet::new();
    let sized = plan.workers.iter().any(Option::is_some);
    for spec in &plan.targets {
        let nginx_missing = matches!(spec, TargetSpec::Nginx { .. }) && !nginx;
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
                if !runs.is_empty() && !nginx_missing {
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
        if nginx_missing && spec_runs > 0 {
            let config = RunConfig {
                experiment: plan.experiment.clone(),
                target: spec.to_string(),
                workers: spec.workers(None) as u64,
                ..RunConfig::default()
            };
            s.skipped.push((config, spec_runs));
        }
    }
    s.notes.dedup();
    s
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

/// The runs of one target instance still to make. A configuration whose
/// measured repeats are all in raw.csv is skipped whole; otherwise its
/// warm-up runs are made again (the target is a fresh process, which is
/// what warm-up is for) and then only the missing repeats.
fn runs_to_do(
    plan: &SweepPlan,
    instance: &RunConfig,
    done: &HashSet<RunKey>,
    already_done: &mut usize,
) -> Vec<PlannedRun> {
    let mut out = Vec::new();
    for path in &plan.paths {
        for &keepalive in &plan.keepalive {
            for &load in &plan.loads {
                for &c in &plan.concurrency {
                    let (requests, duration_s) = load.fields();
                    let config = RunConfig {
                        path: path.clone(),
                        concurrency: c as u64,
                        requests,
                        duration_s,
                        keepalive,
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
                    out.extend((1..=plan.warmup_runs).map(|w| run(w, true)));
                    out.extend(missing);
                }
            }
        }
    }
    out
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
            repeat: 2,
            warmup_runs: 1,
            timeout: Duration::from_secs(1),
            threads: None,
        }
    }

    #[test]
    fn every_run_is_planned_with_warmups_first() {
        let p = plan();
        let s = schedule(&p, &[], true);
        assert_eq!(s.instances.len(), 2);
        assert_eq!(s.runs(), 2 * 2 * 3);
        let reps: Vec<(u64, bool)> = s.instances[0].runs[..3]
            .iter()
            .map(|r| (r.repeat, r.warmup))
            .collect();
        assert_eq!(reps, [(1, true), (1, false), (2, false)]);
        assert!(s.skipped.is_empty());
    }

    #[test]
    fn recorded_runs_are_not_made_again() {
        let p = plan();
        let first = schedule(&p, &[], true);
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
        let again = schedule(&p, &rows, true);
        assert_eq!(again.already_done, 2);
        assert_eq!(again.runs(), first.runs() - 3);
    }

    #[test]
    fn missing_nginx_is_skipped_with_its_runs() {
        let p = plan();
        let s = schedule(&p, &[], false);
        assert_eq!(s.instances.len(), 1);
        assert_eq!(s.skipped.len(), 1);
        assert_eq!(s.skipped[0].0.target, "nginx:workers=1");
        assert_eq!(s.skipped[0].1, 6);
    }
}
