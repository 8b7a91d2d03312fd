//! Summary unit tests: sample statistics, status precedence, and loads
//! kept apart as configurations.

use super::*;

#[test]
fn sample_sd() {
    let (m, sd) = mean_sd(&[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(m, 2.5);
    assert!((sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
    assert_eq!(mean_sd(&[7.0]), (7.0, 0.0));
    assert_eq!(mean_sd(&[]), (0.0, 0.0));
}

fn run(id: u64, requests: u64, duration_s: f64, repeat: u64, tpr: f64) -> RawRow {
    RawRow {
        run_id: id,
        experiment: "sweep".into(),
        target: "model:event-loop".into(),
        path: "/500B.html".into(),
        concurrency: 2,
        requests,
        duration_s,
        repeat,
        time_per_request_ms: tpr,
        requests_per_second: 1000.0 / tpr,
        ..RawRow::default()
    }
}

/// The status is the first flag that applies; the booleans keep the
/// rest.
#[test]
fn status_precedence() {
    let base = |rep: u64| RawRow {
        ok_responses: 100,
        ok_rps: 1000.0,
        complete: 100,
        time_taken_s: 1.0,
        ..run(rep, 100, 0.0, rep, 1.0)
    };
    let status = |edit: &dyn Fn(&mut RawRow)| {
        let mut raw: Vec<RawRow> = (1..=3).map(base).collect();
        edit(&mut raw[1]);
        let s = summarize(&raw);
        (s.rows[0].status, s.rows[0].flags())
    };
    assert_eq!(status(&|_| {}), (Status::Ok, vec![]));
    assert_eq!(status(&|r| r.ok_rps = 2000.0).0, Status::Noisy);
    let all = |r: &mut RawRow| {
        r.failed = 1;
        r.non_2xx = 1;
        r.client_bound = true;
        r.cpu_saturated = true;
        r.ok_rps = 2000.0;
    };
    assert_eq!(
        status(&all),
        (
            Status::Failed,
            vec![
                Status::Failed,
                Status::Non2xx,
                Status::ClientBound,
                Status::CpuSaturated,
                Status::Noisy
            ]
        )
    );
    assert_eq!(
        status(&|r| {
            r.non_2xx = 1;
            r.client_bound = true
        })
        .0,
        Status::Non2xx
    );
    assert_eq!(
        status(&|r| {
            r.cpu_saturated = true;
            r.client_bound = true
        })
        .0,
        Status::ClientBound
    );
    assert_eq!(status(&|r| r.cpu_saturated = true).0, Status::CpuSaturated);
    // No answer at all is a failure even without failed requests.
    let none = summarize(&[RawRow {
        ok_responses: 0,
        ..base(1)
    }]);
    assert_eq!(none.rows[0].status, Status::Failed);
    // One run: no interval, no CV, written as empty rather than ±inf.
    let one = summarize(&[base(1)]);
    assert_eq!((one.rows[0].rps_ci95_low, one.rows[0].rps_cv), (None, None));
}

/// Regression: `--requests 100,1000` was averaged as if the two loads
/// were repeats, and repeat 1 of one load sat in the windows of the
/// other.
#[test]
fn loads_are_configurations_not_repeats() {
    let raw = vec![
        run(1, 100, 0.0, 1, 1.0),
        run(2, 100, 0.0, 2, 2.0),
        run(3, 1000, 0.0, 1, 10.0),
        run(4, 1000, 0.0, 2, 20.0),
        run(5, 0, 0.5, 1, 7.0),
        run(6, 0, 0.5, 2, 9.0),
    ];
    let s = summarize(&raw);
    assert_eq!(s.rows.len(), 3);
    let by = |requests: u64, duration_s: f64| {
        s.rows
            .iter()
            .find(|r| r.requests == requests && r.duration_s == duration_s)
            .expect("a summary row per load")
    };
    assert_eq!(by(100, 0.0).runs, 2);
    assert_eq!(by(100, 0.0).time_per_request_ms_mean, 1.5);
    assert_eq!(by(1000, 0.0).time_per_request_ms_mean, 15.0);
    assert_eq!(by(0, 0.5).time_per_request_ms_mean, 8.0);
    for g in &s.groups {
        let reps: Vec<u64> = g.runs.iter().map(|r| r.repeat).collect();
        assert_eq!(reps, vec![1, 2], "repeats of one load only: {:?}", g.key);
    }
    assert!(Varies::of(s.groups.iter().map(|g| &g.key)).load);
    let labels: Vec<String> = s.groups.iter().map(|g| g.key.load_label()).collect();
    assert_eq!(labels, ["0.5 s", "100 requests", "1000 requests"]);
    assert_eq!(by(0, 0.5).duration_s, 0.5);
}
