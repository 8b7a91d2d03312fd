//! Each kind of finding built from a small fixture of raw rows, including
//! the cases where nothing can be concluded.

use super::*;
use crate::report::summary::summarize;
use crate::results::raw::RawRow;
use crate::results::sweep_info::{BusyProcess, HostSample};

/// One measured run: `rps` answered requests/s, p99 in ms.
fn run(target: &str, c: u64, keepalive: bool, round: u64, rps: f64, p99: f64) -> RawRow {
    RawRow {
        run_id: round * 1000 + c,
        experiment: "sweep".into(),
        target: target.into(),
        path: "/500B.html".into(),
        concurrency: c,
        duration_s: 1.0,
        keepalive,
        repeat: round,
        time_taken_s: 1.0,
        complete: rps as u64,
        ok_responses: rps as u64,
        ok_rps: rps,
        requests_per_second: rps,
        p99_ms: p99,
        server_rss_peak_kb: 4000,
        server_cpu_ms: 500.0,
        server_ctx_switches: 100,
        ..RawRow::default()
    }
}

/// Three rounds of a target at one concurrency, spread by ±`spread`.
fn rounds(target: &str, c: u64, rps: f64, spread: f64, p99: f64) -> Vec<RawRow> {
    [-spread, 0.0, spread]
        .iter()
        .enumerate()
        .map(|(i, d)| run(target, c, true, i as u64 + 1, rps + d, p99))
        .collect()
}

fn of(raw: &[RawRow]) -> Vec<Finding> {
    findings(&summarize(raw), None, None, None)
}

fn kinds(f: &[Finding]) -> Vec<Kind> {
    f.iter().map(|f| f.kind).collect()
}

fn text(f: &[Finding], kind: Kind) -> String {
    f.iter()
        .find(|f| f.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?} finding in {f:#?}"))
        .text
        .clone()
}

#[test]
fn a_clear_leader_is_named_with_its_paired_ratio() {
    let mut raw = rounds("nginx", 10, 20_000.0, 100.0, 1.0);
    raw.extend(rounds("model:event-loop", 10, 10_000.0, 100.0, 1.0));
    let f = of(&raw);
    // nginx answered twice as many for the same CPU: half the cost.
    assert_eq!(kinds(&f), [Kind::Cost, Kind::Lead]);
    let t = text(&f, Kind::Lead);
    assert!(
        t.starts_with("At c=10: nginx leads with 20000 ± 248 requests/s, 2.00× model:event-loop"),
        "{t}"
    );
    assert!(t.contains("95 % interval"), "{t}");
}

#[test]
fn overlapping_targets_are_no_clear_difference() {
    let mut raw = rounds("a", 10, 10_000.0, 1500.0, 1.0);
    // Round 2 of b is the higher one, so the paired ratios straddle 1.
    raw.extend([
        run("b", 10, true, 1, 10_400.0, 1.0),
        run("b", 10, true, 2, 9_000.0, 1.0),
        run("b", 10, true, 3, 10_600.0, 1.0),
    ]);
    let t = text(&of(&raw), Kind::Lead);
    assert!(
        t.starts_with("At c=10: no clear difference between a "),
        "{t}"
    );
    assert!(t.contains("holds 1"), "{t}");
}

#[test]
fn the_knee_is_where_requests_stop_rising_beyond_the_interval() {
    let mut raw = rounds("a", 1, 5_000.0, 50.0, 0.2);
    raw.extend(rounds("a", 10, 20_000.0, 50.0, 0.5));
    raw.extend(rounds("a", 100, 20_030.0, 50.0, 5.0));
    raw.extend(rounds("b", 1, 5_000.0, 50.0, 0.2));
    raw.extend(rounds("b", 10, 9_000.0, 50.0, 0.3));
    raw.extend(rounds("b", 100, 30_000.0, 50.0, 0.4));
    // A dip at c=10 followed by a clear rise is not where c saturates.
    raw.extend(rounds("c", 1, 5_000.0, 50.0, 0.2));
    raw.extend(rounds("c", 10, 4_000.0, 50.0, 0.3));
    raw.extend(rounds("c", 100, 8_000.0, 50.0, 0.4));
    let f = of(&raw);
    let t = text(&f, Kind::Knee);
    assert_eq!(
        t,
        "Where requests/s stops rising beyond its interval: a after c=10; b and c still rise at c=100, the highest measured."
    );
}

#[test]
fn p99_growing_tenfold_is_reported_from_the_lowest_concurrency() {
    let mut raw = rounds("a", 1, 5_000.0, 50.0, 0.2);
    raw.extend(rounds("a", 10, 20_000.0, 50.0, 1.0));
    raw.extend(rounds("a", 100, 20_030.0, 50.0, 12.5));
    raw.extend(rounds("b", 1, 5_000.0, 50.0, 0.2));
    raw.extend(rounds("b", 100, 9_000.0, 50.0, 0.5));
    let t = text(&of(&raw), Kind::Latency);
    assert_eq!(
        t,
        "p99 latency grows tenfold over its value at the lowest concurrency (c=1): a by c=100 (0.200 → 12.5 ms)."
    );
}

#[test]
fn flagged_cells_say_what_the_flag_means_and_what_to_do() {
    let mut raw = rounds("ok", 1, 5_000.0, 10.0, 0.2);
    let mut failed = rounds("f", 1, 5_000.0, 10.0, 0.2);
    failed[0].failed = 3;
    let mut non = rounds("n", 1, 5_000.0, 10.0, 0.2);
    for r in &mut non {
        r.non_2xx = r.complete;
        r.ok_responses = 0;
        r.ok_rps = 0.0;
    }
    let mut client = rounds("cb", 1, 5_000.0, 10.0, 0.2);
    client[1].client_bound = true;
    client[1].cpu_saturated = true;
    let mut noisy = rounds("z", 1, 5_000.0, 2_000.0, 0.2);
    noisy[2].time_taken_s = 0.05;
    for set in [failed, non, client, noisy] {
        raw.extend(set);
    }
    let f = of(&raw);
    let t = |k| text(&f, k);
    assert!(t(Kind::Failed).starts_with("Failed: 1 cell (f (c=1))"));
    assert!(t(Kind::Non2xx).contains("404"));
    assert!(t(Kind::ClientBound).contains("--cpus") && t(Kind::ClientBound).contains("cb (c=1)"));
    // A cell keeps every flag that applies, not only its status.
    assert!(t(Kind::CpuSaturated).contains("cb (c=1)"));
    assert!(t(Kind::Noisy).contains("z (c=1)") && t(Kind::Noisy).contains("--repeat"));
    assert!(t(Kind::CpuRough).contains("z (c=1)"));
    // Flag sentences come after the comparisons, in a fixed order.
    let k = kinds(&f);
    let pos = |x| k.iter().position(|y| *y == x).expect("present");
    assert!(pos(Kind::Lead) < pos(Kind::Failed));
    assert!(pos(Kind::Failed) < pos(Kind::Non2xx) && pos(Kind::Noisy) < pos(Kind::CpuRough));
    // The broken cells are not in the lead comparison.
    let lead = t(Kind::Lead);
    assert!(!lead.contains("f (") && !lead.contains(" n "), "{lead}");
}

#[test]
fn a_busy_host_is_named_with_its_reasons() {
    let raw = rounds("a", 1, 5_000.0, 10.0, 0.2);
    let info = SweepInfo {
        host_start: Some(HostSample {
            loadavg: [1.5, 1.0, 0.5],
            steal_pct: 0.0,
            busy_processes: vec![BusyProcess {
                pid: 7,
                command: "cc1plus".into(),
                cpu_pct: 95.0,
            }],
            ..HostSample::default()
        }),
        host_end: Some(HostSample {
            steal_pct: 8.0,
            ..HostSample::default()
        }),
        ..SweepInfo::default()
    };
    let machine = Machine {
        cores: 2,
        cpu_model: String::new(),
        kernel: String::new(),
        memory_gib: 1.0,
        loadlab_version: String::new(),
        hostname: String::new(),
    };
    let f = findings(&summarize(&raw), Some(&info), Some(&machine), None);
    assert_eq!(
        text(&f, Kind::BusyHost),
        "The host was busy (at the start, load average 1.50 on 2 cores; other busy processes: cc1plus (95 % CPU); at the end, 8.0 % of CPU time stolen by the hypervisor): the results may be slower and noisier than on a quiet machine."
    );
    let quiet = SweepInfo {
        host_start: Some(HostSample::default()),
        ..SweepInfo::default()
    };
    let f = findings(&summarize(&raw), Some(&quiet), Some(&machine), None);
    assert!(!kinds(&f).contains(&Kind::BusyHost));
}

#[test]
fn nothing_can_be_concluded_when_every_run_failed() {
    let mut r = run("a", 1, true, 1, 0.0, 0.0);
    r.set_failed("target did not start".into());
    let f = of(&[r]);
    assert_eq!(kinds(&f), [Kind::Failed, Kind::Nothing]);
    assert!(text(&f, Kind::Nothing).contains("every run failed (1 could not be made"));
}

#[test]
fn nothing_can_be_concluded_from_one_repeat() {
    let raw = vec![
        run("a", 1, true, 1, 5_000.0, 0.2),
        run("b", 1, true, 1, 9_000.0, 0.2),
    ];
    let f = of(&raw);
    assert_eq!(kinds(&f), [Kind::Nothing]);
    assert!(text(&f, Kind::Nothing).contains("each cell ran once"));
}

#[test]
fn nothing_can_be_concluded_when_every_cell_is_non_2xx() {
    let mut raw = rounds("a", 1, 5_000.0, 10.0, 0.2);
    raw.extend(rounds("b", 1, 5_000.0, 10.0, 0.2));
    for r in &mut raw {
        r.non_2xx = r.complete;
        r.ok_responses = 0;
        r.ok_rps = 0.0;
    }
    let f = of(&raw);
    assert_eq!(kinds(&f), [Kind::Non2xx, Kind::Nothing]);
    assert!(text(&f, Kind::Nothing).contains("every cell failed or got non-2xx"));
}

#[test]
fn settings_name_only_the_dimensions_that_vary() {
    let mut raw = rounds("a", 1, 5_000.0, 10.0, 0.2);
    raw.extend(rounds("b", 1, 9_000.0, 10.0, 0.2));
    let mut off: Vec<RawRow> = rounds("a", 1, 4_000.0, 10.0, 0.2);
    off.extend(rounds("b", 1, 2_000.0, 10.0, 0.2));
    for r in &mut off {
        r.keepalive = false;
    }
    raw.extend(off);
    let f = of(&raw);
    let leads: Vec<&str> = f
        .iter()
        .filter(|f| f.kind == Kind::Lead)
        .map(|f| f.text.as_str())
        .collect();
    assert_eq!(leads.len(), 2, "{leads:?}");
    assert!(
        leads[0].starts_with("At keep-alive off, c=1: a leads"),
        "{leads:?}"
    );
    assert!(
        leads[1].starts_with("At keep-alive on, c=1: b leads"),
        "{leads:?}"
    );
}

/// Cost per request `cost` µs in each of three rounds, spread by
/// ±`spread`, with the same drift in every target's round 2.
fn costly(target: &str, cost: f64, spread: f64) -> Vec<RawRow> {
    [(1, -spread), (2, 0.0), (3, spread)]
        .into_iter()
        .map(|(round, d)| {
            let mut r = run(target, 50, true, round, 10_000.0, 1.0);
            // Round 2 ran on a slower host: every target's cost rose 30 %.
            let drift = if round == 2 { 1.3 } else { 1.0 };
            r.server_cpu_ms = (cost + d) * drift * r.complete as f64 / 1000.0;
            r
        })
        .collect()
}

#[test]
fn cost_ranks_cheapest_first_in_groups_its_intervals_decide() {
    let mut raw = costly("el", 11.2, 0.1);
    // Its noise runs against el's, so their per-round ratio straddles 1.
    raw.extend(costly("uring", 11.3, -0.1));
    raw.extend(costly("pool", 35.0, 0.5));
    let f = of(&raw);
    let t = text(&f, Kind::Cost);
    assert!(
        t.starts_with("At c=50: server CPU per request (µs), cheapest first: el "),
        "{t}"
    );
    // el and uring are 1 % apart: not decided; pool is three times dearer.
    assert!(t.contains("el ") && t.contains(" ≈ uring "), "{t}");
    // Round 2's drift widens each target's own interval; the paired
    // ratios still decide.
    assert!(t.contains(", then pool "), "{t}");
    assert_eq!(f[0].kind, Kind::Cost, "the decided ranking leads: {f:#?}");
    assert!(!kinds(&f).contains(&Kind::Nothing), "{f:#?}");
    // What it could not split is said after the rankings, with why.
    let u = text(&f, Kind::Undecided);
    assert!(
        u.starts_with(
            "Not decided, and why: server CPU per request of el ≈ uring (c=50): within ±"
        ) && u.contains("% (the widest paired interval of 3 rounds), noise."),
        "{u}"
    );
    let at = |k: Kind| kinds(&f).iter().position(|x| *x == k);
    assert!(at(Kind::Undecided) > at(Kind::Cost), "{f:#?}");
}
