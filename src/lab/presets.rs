//! The reference experiments of EXPERIMENTS.md as sweep plans (E2 is the
//! file-transfer matrix of `loadlab stress`), and the short default
//! comparison that `loadlab` runs with no arguments.

use std::time::Duration;

use super::sweep::{Load, SweepPlan};
use super::target::TargetSpec;
use crate::server::Model;

pub const PRESETS: [&str; 5] = ["e1", "e2", "e3", "e4", "e5"];

fn cores() -> usize {
    crate::sys::cores()
}

fn model(m: Model) -> TargetSpec {
    TargetSpec::Model {
        model: m,
        workers: None,
    }
}

fn base(experiment: &str, targets: Vec<TargetSpec>) -> SweepPlan {
    SweepPlan {
        experiment: experiment.to_string(),
        targets,
        concurrency: vec![1],
        loads: vec![Load::Requests(1000)],
        keepalive: vec![false],
        paths: vec!["/500B.html".into()],
        workers: vec![None],
        cpus: vec![None],
        repeat: 1,
        warmup_runs: 0,
        timeout: Duration::from_secs(30),
        threads: None,
    }
}

/// The plan for a preset; `quick` makes it small enough for a first look
/// or CI. E2 has no sweep plan: the CLI hands it to `loadlab stress`.
pub fn plan(name: &str, quick: bool) -> Result<SweepPlan, String> {
    let all_models = || Model::ALL.iter().map(|&m| model(m)).collect::<Vec<_>>();
    let mut p = match name {
        // Event loop vs threads under ab: 1,000 requests, no keep-alive.
        "e1" => {
            let mut p = base(
                "e1",
                vec![model(Model::EventLoop), model(Model::ThreadPerConn)],
            );
            p.concurrency = if quick {
                vec![1, 50, 100]
            } else {
                vec![1, 50, 100, 500, 1000]
            };
            p.loads = vec![Load::Requests(if quick { 300 } else { 1000 })];
            p
        }
        // 10,000 clients at once on small and 20 KB files, vs nginx.
        "e3" => {
            let w = cores();
            let mut p = base(
                "e3",
                vec![
                    TargetSpec::Model {
                        model: Model::Reactors,
                        workers: Some(w),
                    },
                    model(Model::EventLoop),
                    TargetSpec::Nginx { workers: Some(w) },
                ],
            );
            let n = if quick { 2000 } else { 10_000 };
            p.concurrency = vec![n];
            p.loads = vec![Load::Requests(n as u64)];
            p.paths = vec!["/500B.html".into(), "/20KB.html".into()];
            p
        }
        // Thread-pool size vs cores: 5,000 requests at c=200, 5 repeats.
        "e4" => {
            let mut p = base("e4", vec![model(Model::ThreadPool)]);
            p.workers = if quick {
                vec![0, 1, 2, 4]
            } else {
                vec![0, 1, 2, 3, 4, 6, 8]
            }
            .into_iter()
            .map(Some)
            .collect();
            // Counted from the CPUs loadlab may use, which is what --cpus
            // pins to (a container may allow fewer than the machine has).
            let allowed = crate::proc::affinity::allowed_cpus().len();
            p.cpus = [1, 2, 4]
                .into_iter()
                .filter(|&c| c <= allowed)
                .map(Some)
                .collect();
            p.concurrency = vec![200];
            p.loads = vec![Load::Requests(if quick { 1000 } else { 5000 })];
            p.paths = vec!["/index.html".into()];
            p.repeat = 5;
            p
        }
        // Concurrency sweep with keep-alive on and off, every model.
        "e5" => {
            let mut p = base("e5", all_models());
            p.concurrency = if quick {
                vec![1, 8, 16, 36]
            } else {
                std::iter::once(1).chain((1..=9).map(|i| i * 4)).collect()
            };
            p.keepalive = vec![true, false];
            p.loads = vec![Load::Requests(1000)];
            p
        }
        "default" => default_plan(),
        "e2" => {
            return Err(
                "e2 is a file-transfer matrix; it runs through `loadlab stress --preset e2`".into(),
            )
        }
        other => {
            return Err(format!(
                "unknown preset '{other}' (expected one of: {})",
                PRESETS.join(", ")
            ))
        }
    };
    if quick {
        p.experiment = format!("{}-quick", p.experiment);
    }
    Ok(p)
}

/// `loadlab` with no arguments: every model (and nginx when installed) on
/// /500B.html at c = 1, 10, 100, 1000, keep-alive off and on; short timed
/// runs so the whole comparison takes about a minute on two cores.
pub fn default_plan() -> SweepPlan {
    let mut targets: Vec<TargetSpec> = Model::ALL.iter().map(|&m| model(m)).collect();
    targets.push(TargetSpec::Nginx { workers: None });
    let mut p = base("default", targets);
    p.concurrency = vec![1, 10, 100, 1000];
    p.keepalive = vec![false, true];
    p.loads = vec![Load::Duration(Duration::from_millis(600))];
    p
}
