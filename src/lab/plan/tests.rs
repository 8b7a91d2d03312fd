//! Unit tests of the sweep plan: expansion, schedule order, resume and skipped targets.

use super::*;
use crate::catalog::models::Model;

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
        rates: vec![None],
        loads: vec![Load::Requests(100)],
        keepalive: vec![false],
        paths: vec!["/".into()],
        workers: vec![None],
        cpus: vec![None],
        cpus_asked: false,
        client_cpus: None,
        slow: vec![SlowKind::None],
        slow_conns: 0,
        repeat: 2,
        warmup_runs: 1,
        host_warmup: false,
        min_time: Duration::from_secs(1),
        timeout: Duration::from_secs(1),
        max_cell_time: Duration::from_secs(60),
        check: true,
        threads: None,
        shards: None,
        capacity: None,
        cells: true,
        accounting: false,
        profile: false,
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
    // 2 of each in reverse order (no instance always first), two
    // concurrency levels per round.
    let want: Vec<(usize, u64, bool)> = [
        [(0, 1, true); 2],
        [(0, 1, false); 2],
        [(1, 1, true); 2],
        [(1, 1, false); 2],
        [(1, 2, false); 2],
        [(0, 2, false); 2],
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
    // Round 2 runs in reverse: instance 1, then instance 0's warm-ups
    // and its first missing round.
    let want: Vec<(usize, u64, bool)> = [
        [(1, 1, true); 2],
        [(1, 1, false); 2],
        [(1, 2, false); 2],
        [(0, 1, true); 2],
        [(0, 2, false); 2],
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

/// The rows raw.csv holds once `runs` were made.
fn recorded<'a>(runs: impl Iterator<Item = &'a PlannedRun>) -> Vec<RawRow> {
    runs.map(|r| {
        let mut row = RawRow {
            repeat: r.repeat,
            ..RawRow::default()
        };
        row.set_run_config(&r.config);
        row
    })
    .collect()
}

#[test]
fn recorded_runs_are_not_made_again() {
    let p = plan();
    let first = schedule(&p, &[], Installed::ALL);
    let rows = recorded(
        first.instances[0]
            .runs
            .iter()
            .filter(|r| !r.warmup && r.config.concurrency == 1),
    );
    let again = schedule(&p, &rows, Installed::ALL);
    assert_eq!(again.already_done, 2);
    assert_eq!(again.runs(), first.runs() - 3);
}

#[test]
fn slow_conditions_run_innermost_and_none_holds_no_connections() {
    let mut p = plan();
    p.slow = vec![SlowKind::None, SlowKind::Header];
    p.slow_conns = 2000;
    p.warmup_runs = 0;
    let s = schedule(&p, &[], Installed::ALL);
    assert_eq!(s.runs(), p.runs());
    let cells: Vec<(u64, SlowKind, u64, u64)> = s.instances[0]
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
    let (none, header) = (SlowKind::None, SlowKind::Header);
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
    let first: Vec<SlowKind> = made(&s)
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

#[test]
fn each_offered_rate_is_its_own_cell_and_a_resume_tells_them_apart() {
    let mut p = plan();
    p.targets.truncate(1);
    p.concurrency = vec![50];
    p.rates = vec![Some(1000.0), Some(5000.0)];
    p.warmup_runs = 0;
    let first = schedule(&p, &[], Installed::ALL);
    let rates: Vec<Option<f64>> = first.instances[0]
        .runs
        .iter()
        .filter(|r| r.repeat == 1)
        .map(|r| r.config.rate)
        .collect();
    assert_eq!(
        rates,
        [Some(1000.0), Some(5000.0)],
        "increasing, in a round"
    );
    assert_eq!(first.runs(), p.runs());
    // Runs recorded at 1000/s: the 5000/s runs and the closed-loop ones
    // are still to make.
    let rows = recorded(
        first.instances[0]
            .runs
            .iter()
            .filter(|r| r.config.rate == Some(1000.0)),
    );
    let again = schedule(&p, &rows, Installed::ALL);
    assert_eq!(again.runs(), 2);
    p.rates = vec![None];
    assert_eq!(
        schedule(&p, &rows, Installed::ALL).runs(),
        2,
        "closed loop is another cell"
    );
}
