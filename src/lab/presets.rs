//! The sweep plans of the reference experiments (the registry of presets
//! is `catalog::presets`; E2 is the file-transfer matrix of `loadlab
//! stress`), a plain sweep's starting plan, and the short default
//! comparison that `loadlab` runs with no arguments.

use std::time::Duration;

use super::plan::{Load, SweepPlan};
use crate::catalog::models::Model;
use crate::catalog::presets::Preset;
use crate::catalog::slow::SlowKind;
use crate::proc::target::TargetSpec;

/// Measured rounds of a plain sweep, a preset and the bare run: fewer
/// give no interval at all (two give one as wide as the t table makes it).
pub const REPEATS: usize = 3;
/// `--min-time`: the shortest a time-limited run lasts by default.
pub const MIN_TIME: Duration = Duration::from_secs(1);
/// The bare run's cells: short enough for every model and nginx at three
/// concurrency levels, both keep-alive settings and three rounds in well
/// under two minutes.
pub const DEFAULT_CELL: Duration = Duration::from_millis(500);

/// E6's slow connections per cell: issue 19's audit denied the blocking
/// models completely at this many.
pub const E6_SLOW_CONNS: usize = 2000;
/// E6's cells: long enough for a p99 over thousands of requests and for
/// a denied request to reach its timeout inside the cell.
pub const E6_CELL: Duration = Duration::from_secs(3);
/// E6 --quick's cells.
pub const E6_QUICK_CELL: Duration = Duration::from_millis(1500);
/// The longest one run of any sweep may take unless `--max-cell-time`
/// says otherwise: far past what any preset's run needs, short enough
/// that a server which stopped making progress costs a minute, not hours.
pub const MAX_CELL_TIME: Duration = Duration::from_secs(60);

/// E6's per-request timeout: a normal answer takes well under 10 ms, and a
/// request a held server never answers must end as a failure inside the
/// cell rather than be cut off uncounted at its end.
pub const E6_TIMEOUT: Duration = Duration::from_secs(1);

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
        rates: vec![None],
        loads: vec![Load::Requests(1000)],
        keepalive: vec![false],
        paths: vec!["/500B.html".into()],
        workers: vec![None],
        cpus: vec![crate::proc::affinity::default_split()],
        cpus_asked: false,
        client_cpus: None,
        slow: vec![SlowKind::None],
        slow_conns: 0,
        repeat: REPEATS,
        warmup_runs: 0,
        host_warmup: true,
        min_time: MIN_TIME,
        timeout: Duration::from_secs(30),
        max_cell_time: MAX_CELL_TIME,
        check: true,
        threads: None,
        shards: None,
        capacity: None,
        cells: true,
        accounting: true,
        profile: false,
    }
}

/// A plain `loadlab sweep`: no targets yet, c = 1, 10, 100, 1,000
/// requests, keep-alive off, 3 rounds; the flags fill in the rest.
pub fn sweep_plan() -> SweepPlan {
    let mut p = base("sweep", Vec::new());
    p.concurrency = vec![1, 10, 100];
    p
}

impl Preset {
    /// The sweep plan of a preset of kind `Sweep`; `quick` makes it small
    /// enough for a first look or CI. `None` for E2, which
    /// `loadlab stress` runs.
    pub fn sweep_plan(self, quick: bool) -> Option<SweepPlan> {
        let mut p = plan(self, quick)?;
        p.experiment = self.label(quick);
        Some(p)
    }
}

fn plan(preset: Preset, quick: bool) -> Option<SweepPlan> {
    let all_models = || Model::ALL.iter().map(|&m| model(m)).collect::<Vec<_>>();
    Some(match preset {
        // Every model under ab: 1,000 requests, no keep-alive. The
        // reference study set an event loop against threads; the other
        // models answer the same question, so they share its table.
        Preset::E1 => {
            let mut p = base(preset.name(), all_models());
            p.concurrency = if quick {
                vec![1, 50, 100]
            } else {
                vec![1, 50, 100, 500, 1000]
            };
            p.loads = vec![Load::Requests(if quick { 300 } else { 1000 })];
            p
        }
        // 10,000 clients at once on small and 20 KB files, vs nginx.
        Preset::E3 => {
            let w = cores();
            let mut p = base(
                preset.name(),
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
            // The first 10,000-connection burst of a sweep took ~0.37 s
            // against ~0.25-0.30 s for the later ones, whichever target
            // it met (floor first or reactors first, 4 repeats each): an
            // unmeasured run per target keeps that out of the first one's
            // time, which was always the reactors'.
            p.warmup_runs = 1;
            p
        }
        // Thread-pool size vs cores: 5,000 requests at c=200, 5 repeats.
        Preset::E4 => {
            let mut p = base(preset.name(), vec![model(Model::ThreadPool)]);
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
            p.cpus_asked = true;
            p.concurrency = vec![200];
            p.loads = vec![Load::Requests(if quick { 1000 } else { 5000 })];
            p.paths = vec!["/index.html".into()];
            p.repeat = 5;
            p
        }
        // Concurrency sweep with keep-alive on and off: every model of
        // the registry (so `async`, Go's own model, once it is there)
        // beside Go's net/http itself, which a machine without go skips
        // with one line (`plan::Installed`).
        Preset::E5 => {
            let mut targets = all_models();
            targets.push(TargetSpec::Go { workers: None });
            let mut p = base(preset.name(), targets);
            p.concurrency = if quick {
                vec![1, 8, 16, 36]
            } else {
                std::iter::once(1).chain((1..=9).map(|i| i * 4)).collect()
            };
            p.keepalive = vec![true, false];
            p.loads = vec![Load::Requests(1000)];
            p
        }
        // A normal keep-alive client at c=1, alone and beside 2,000 slow
        // clients of each kind, on every model and nginx.
        Preset::E6 => {
            let mut targets = all_models();
            targets.push(TargetSpec::Nginx { workers: None });
            let mut p = base(preset.name(), targets);
            p.keepalive = vec![true];
            p.slow = SlowKind::ALL.to_vec();
            p.slow_conns = E6_SLOW_CONNS;
            let cell = if quick { E6_QUICK_CELL } else { E6_CELL };
            p.loads = vec![Load::Duration(cell)];
            p.min_time = cell;
            p.timeout = E6_TIMEOUT;
            p
        }
        Preset::E2 => return None,
    })
}

/// Connections that carry the bare run's offered rates.
pub const DEFAULT_CONNECTIONS: usize = 50;
/// The bare run's common rate: this share of the lowest capacity found
/// (bounds included, targets below the first rate left out). A quarter,
/// not a half: capacity is searched with keep-alive, and the same rate
/// is then offered without it, where each request is a new connection.
pub const COMMON_SHARE: f64 = 0.25;

/// `loadlab` with no arguments: every model (and nginx when installed) on
/// /500B.html. First each one's capacity with keep-alive within p99 < 10
/// ms (`--capacity`, 0.5 s probes, 3 rounds); then every target offered
/// one common rate, a quarter of the lowest capacity found, with
/// keep-alive on and off, in 3 interleaved rounds of 0.5 s cells: cost
/// and latency at equal load. The closed-loop concurrency design stays in
/// the E1-E6 presets.
pub fn default_plan() -> SweepPlan {
    let mut targets: Vec<TargetSpec> = Model::ALL.iter().map(|&m| model(m)).collect();
    targets.push(TargetSpec::Nginx { workers: None });
    let mut p = base("default", targets);
    p.concurrency = vec![DEFAULT_CONNECTIONS];
    p.keepalive = vec![true, false];
    p.loads = vec![Load::Duration(DEFAULT_CELL)];
    p.min_time = DEFAULT_CELL;
    p.capacity = Some(super::capacity::settings::CapacityPlan {
        objective: crate::results::capacity::Objective::default(),
        keepalive: vec![true],
        concurrency: DEFAULT_CONNECTIONS,
        path: p.paths[0].clone(),
        run_time: DEFAULT_CELL,
        floor: super::capacity::settings::CapacityPlan::FLOOR,
        ceiling: super::capacity::settings::CapacityPlan::CEILING,
        rounds: p.repeat,
        round_steps: super::capacity::settings::CapacityPlan::ROUND_STEPS,
        common_share: Some(COMMON_SHARE),
    });
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::presets::PresetKind;

    #[test]
    fn exactly_the_sweep_presets_have_a_sweep_plan() {
        for p in Preset::ALL {
            let plan = p.sweep_plan(true);
            assert_eq!(plan.is_some(), p.kind() == PresetKind::Sweep, "{p}");
            if let Some(plan) = plan {
                assert_eq!(Preset::of_label(&plan.experiment), Some(p));
                assert!(plan.runs() > 0, "{p}");
                assert!(plan.repeat >= REPEATS, "{p}");
            }
        }
        assert_eq!(Preset::E4.sweep_plan(false).map(|p| p.repeat), Some(5));
    }

    #[test]
    fn e5_is_every_model_beside_go_net_http() {
        for quick in [true, false] {
            let p = Preset::E5.sweep_plan(quick).unwrap();
            let mut expected: Vec<TargetSpec> = Model::ALL.iter().map(|&m| model(m)).collect();
            expected.push(TargetSpec::Go { workers: None });
            assert_eq!(p.targets, expected);
            assert_eq!(p.keepalive, [true, false]);
        }
    }

    #[test]
    fn e6_holds_every_slow_attack_beside_one_keepalive_client_on_every_target() {
        let full = Preset::E6.sweep_plan(false).unwrap();
        let quick = Preset::E6.sweep_plan(true).unwrap();
        for p in [&full, &quick] {
            assert_eq!(p.targets.len(), Model::ALL.len() + 1);
            assert!(p
                .targets
                .iter()
                .any(|t| matches!(t, TargetSpec::Nginx { .. })));
            assert_eq!(p.slow, SlowKind::ALL);
            assert_eq!(p.slow_conns, E6_SLOW_CONNS);
            assert_eq!(
                (p.concurrency.as_slice(), p.keepalive.as_slice()),
                (&[1][..], &[true][..])
            );
            // A denied request times out inside its cell, so it counts.
            let Load::Duration(cell) = p.loads[0] else {
                panic!("e6 runs time-limited cells")
            };
            assert!(p.timeout < cell && p.min_time == cell);
        }
        assert!(quick.min_time < full.min_time, "--quick has shorter cells");
        assert_eq!(full.experiment, "e6");
    }

    #[test]
    fn the_bare_run_is_every_model_and_nginx_in_three_rounds_of_half_seconds() {
        let p = default_plan();
        assert_eq!(p.targets.len(), Model::ALL.len() + 1);
        assert_eq!(p.concurrency, [DEFAULT_CONNECTIONS]);
        assert_eq!((p.repeat, p.min_time), (3, DEFAULT_CELL));
        assert_eq!(p.loads, [Load::Duration(DEFAULT_CELL)]);
        assert_eq!(p.runs(), (Model::ALL.len() + 1) * 2 * 3);
        let cap = p.capacity.as_ref().expect("the bare run searches capacity");
        assert_eq!((cap.keepalive.as_slice(), cap.rounds), (&[true][..], 3));
        assert_eq!(cap.common_share, Some(COMMON_SHARE));
        assert!(p.cells, "then the cells at the common rate");
    }
}
