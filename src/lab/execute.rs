//! Running a sweep: every target started once, then the schedule from
//! `plan` round by round, one raw row per run appended as soon as it is
//! measured, and sweep.json with the host's conditions before and after.
//! Runs already in raw.csv are not made again, so a rerun into the same
//! directory resumes. Ctrl-C ends the run in progress without recording
//! it, stops the targets and keeps every row before.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::capacity::settings::CapacityPlan;
use super::capacity::{self, Subject};
use super::conditions;
use super::count_pass::Tally;
use super::diagnose::diagnose;
use super::idle::IdleWatch;
use super::measure::{measure, Placement, CAPPED, SLOW_READ_BYTES, SLOW_READ_PATH};
use super::plan::{self, Installed, Load, Schedule, Skipped, SweepPlan};
use super::profile_pass;
use super::record;
use crate::catalog::slow::SlowKind;
use crate::proc::go::find_go;
use crate::proc::nginx::find_nginx;
use crate::proc::target::{Running, StartContext};
use crate::results::capacity as capacity_file;
use crate::results::diagnosis::Diagnosis;
use crate::results::raw::{self, Machine, RawRow, MACHINE_JSON};
use crate::results::sweep_info::{HostSample, SweepInfo, SWEEP_JSON};

/// How the reason of a run not made after a capped one starts.
pub const NOT_MADE: &str = "not made: ";

/// What a sweep tells its caller as it goes (for progress and notes).
#[derive(Debug)]
pub enum SweepEvent<'a> {
    /// Before the first run: the runs to make, and the measured runs of
    /// this plan that raw.csv already holds (not made again).
    Planned { runs: usize, already_done: usize },
    /// A line for the user: a target skipped, a dimension that does not
    /// apply to a target.
    Note(&'a str),
    /// A run was measured and recorded.
    Run(&'a RawRow),
    /// A target did not start: `row` records why, and its `runs` are off
    /// the total.
    Dropped { runs: usize, row: &'a RawRow },
}

/// What a sweep did.
#[derive(Debug, Default)]
pub struct SweepOutcome {
    /// Rows this invocation appended to raw.csv.
    pub rows: Vec<RawRow>,
    /// Ctrl-C ended the sweep; the run in progress then was not recorded.
    pub interrupted: bool,
}

/// `loadlab-results/YYYYmmdd-HHMMSS` in UTC.
pub fn default_out_dir() -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = crate::sys::time::civil_from_days(days as i64);
    PathBuf::from(format!(
        "loadlab-results/{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    ))
}

/// The results directory a sweep writes into, and its row numbering.
struct Journal<'a> {
    out: &'a Path,
    next_id: u64,
    outcome: SweepOutcome,
}

impl Journal<'_> {
    /// Appends `row` (numbered here) to raw.csv and keeps it.
    fn record(&mut self, mut row: RawRow) -> anyhow::Result<&RawRow> {
        row.run_id = self.next_id;
        self.next_id += 1;
        raw::append(self.out, std::slice::from_ref(&row))?;
        self.outcome.rows.push(row);
        Ok(self.outcome.rows.last().expect("just pushed"))
    }
}

/// Runs the plan into `out`, resuming what raw.csv there already holds,
/// and keeps `info` (command, baseline) in sweep.json with the host's
/// conditions. `stop` is polled between runs, during runs and while a
/// target starts; `on_event` hears the plan, notes and each run.
pub fn run(
    plan: &SweepPlan,
    out: &Path,
    mut info: SweepInfo,
    stop: &(dyn Fn() -> bool + Sync),
    on_event: &mut dyn FnMut(SweepEvent),
) -> anyhow::Result<SweepOutcome> {
    let existing = open_results(out)?;
    refuse_rates_into_older(plan, out)?;
    let installed = Installed {
        nginx: find_nginx().is_some(),
        go: find_go().is_some(),
    };
    let mut schedule = plan::schedule(plan, &existing, installed);
    schedule.notes.extend(accounting_note(plan));
    let mut journal = Journal {
        out,
        next_id: existing.iter().map(|r| r.run_id).max().map_or(1, |m| m + 1),
        outcome: SweepOutcome::default(),
    };
    record_skips(&schedule.skipped, &existing, &mut journal, on_event)?;
    for n in &schedule.notes {
        on_event(SweepEvent::Note(n));
    }
    on_event(SweepEvent::Planned {
        runs: if plan.cells { schedule.runs() } else { 0 },
        already_done: schedule.already_done,
    });
    (info.interleaved, info.min_time_s) = (true, plan.min_time.as_secs_f64());
    info.notes = schedule.notes.clone();
    // Nothing to measure: sweep.json goes on describing the runs made.
    if schedule.runs() == 0 && out.join(SWEEP_JSON).exists() {
        return Ok(journal.outcome);
    }
    info.host_start = Some(host_sample("at the start", on_event));
    conditions::write(out, &info)?;
    let docroot = tempfile::Builder::new()
        .prefix("loadlab-docroot-")
        .tempdir()?;
    crate::server::handlers::write_embedded_docroot(docroot.path())?;
    write_slow_read_file(docroot.path())?;
    let ctx = StartContext {
        exe: std::env::current_exe()?,
        docroot: docroot.path().to_path_buf(),
        backlog: crate::server::LISTEN_BACKLOG,
    };
    match start_all(
        plan,
        &schedule,
        &ctx,
        &mut journal,
        &mut info.notes,
        stop,
        on_event,
    )? {
        Some(started) => {
            if plan.check {
                info.diagnoses = check_targets(plan, &schedule, &started, stop, on_event);
                conditions::write(out, &info)?;
            }
            warm_up_host(plan, &schedule, &started, stop, &mut info.notes);
            if let Some(cap) = &plan.capacity {
                search_capacity(plan, cap, &mut schedule, &started, out, stop, on_event)?;
            }
            if plan.cells && !stop() {
                run_schedule(plan, &schedule, &started, &mut journal, stop, on_event)?;
                if plan.profile && !stop() {
                    profile(plan, &schedule, &started, out, stop, on_event)?;
                }
            } else if stop() {
                journal.outcome.interrupted = true;
            }
        }
        None => journal.outcome.interrupted = true,
    }
    info.host_end = Some(host_sample(AT_END, on_event));
    conditions::write(out, &info)?;
    Ok(journal.outcome)
}

/// `--profile`: each started target profiled once after the runs.
fn profile(
    plan: &SweepPlan,
    schedule: &Schedule,
    started: &[Started],
    out: &Path,
    stop: &(dyn Fn() -> bool + Sync),
    on_event: &mut dyn FnMut(SweepEvent),
) -> anyhow::Result<()> {
    let targets: Vec<_> = (schedule.instances.iter().zip(started))
        .filter_map(|(i, s)| s.as_ref().map(|(r, p)| (i, r, p)))
        .collect();
    let mut note = |n: &str| on_event(SweepEvent::Note(n));
    profile_pass::profile_all(plan, &targets, out, stop, &mut note)
}

/// The capacity search over the started targets, kept in capacity.json;
/// with a common rate (the bare run), every cell is then offered it.
fn search_capacity(
    plan: &SweepPlan,
    cap: &CapacityPlan,
    schedule: &mut Schedule,
    started: &[Started],
    out: &Path,
    stop: &(dyn Fn() -> bool + Sync),
    on_event: &mut dyn FnMut(SweepEvent),
) -> anyhow::Result<()> {
    let subjects: Vec<Subject> = schedule
        .instances
        .iter()
        .zip(started)
        .filter_map(|(inst, s)| {
            let (running, place) = s.as_ref()?;
            Some(Subject {
                inst,
                running,
                place,
            })
        })
        .collect();
    let found = capacity::search_all(plan, cap, &subjects, stop, &mut |n| {
        on_event(SweepEvent::Note(n))
    })?;
    capacity_file::write(out, &found)?;
    if let Some(rate) = found.common_rate {
        on_event(SweepEvent::Note(&format!(
            "every target is then offered {rate} requests/s, {:.0} % of the lowest capacity found",
            cap.common_share.unwrap_or(0.0) * 100.0
        )));
        for run in schedule
            .instances
            .iter_mut()
            .flat_map(|i| i.runs.iter_mut())
        {
            run.config.rate = Some(rate);
        }
    } else if cap.common_share.is_some() && plan.cells {
        on_event(SweepEvent::Note(
            "no target sustained the lowest rate tried, so there is no common rate: the cells run closed loop",
        ));
    }
    Ok(())
}

/// Appended to a raw.csv without the rate column, an open-loop row would
/// read back as closed loop: such a sweep is refused.
fn refuse_rates_into_older(plan: &SweepPlan, out: &Path) -> anyhow::Result<()> {
    let older = raw::older_columns(out).iter().any(|c| c == "rate");
    if older && plan.rates.iter().any(Option::is_some) {
        anyhow::bail!(
            "{} was begun by an older loadlab without the rate column: give --rate sweeps a new --out",
            out.join(raw::RAW_CSV).display()
        );
    }
    Ok(())
}

/// Checks each started target once (its first instance), at the path its
/// runs request, and tells the caller what was found.
fn check_targets(
    plan: &SweepPlan,
    schedule: &Schedule,
    started: &[Started],
    stop: &(dyn Fn() -> bool + Sync),
    on_event: &mut dyn FnMut(SweepEvent),
) -> Vec<Diagnosis> {
    let mut found: Vec<Diagnosis> = Vec::new();
    for (inst, run) in schedule.instances.iter().zip(started) {
        let Some((running, _)) = run else { continue };
        let label = &inst.config.target;
        if stop() || found.iter().any(|d| d.target == *label) {
            continue;
        }
        let path = inst
            .spec
            .own_path()
            .or(plan.paths.first().map(String::as_str))
            .unwrap_or("/");
        let d = diagnose(label, running, path, stop);
        on_event(SweepEvent::Note(&format!(
            "check {label}: {}",
            d.headline()
        )));
        found.push(d);
    }
    found
}

/// Makes the schedule's runs, in order, against the targets that started,
/// recording each; Ctrl-C ends it at the run it interrupts.
fn run_schedule(
    plan: &SweepPlan,
    schedule: &Schedule,
    started: &[Started],
    journal: &mut Journal,
    stop: &(dyn Fn() -> bool + Sync),
    on_event: &mut dyn FnMut(SweepEvent),
) -> anyhow::Result<()> {
    // Per target: the lowest concurrency a run of it was capped at.
    let mut capped: Vec<Option<u64>> = vec![None; started.len()];
    let mut tally = Tally::default();
    for &(i, j) in &schedule.order {
        let Some((running, place)) = &started[i] else {
            continue;
        };
        let run = &schedule.instances[i].runs[j];
        let c = run.config.concurrency;
        if let Some(at) = capped[i].filter(|&at| c >= at) {
            let mut row = record::run_row(run);
            row.set_failed(format!(
                "{NOT_MADE}a run of this target at c = {at} hit --max-cell-time ({} s), and this one asks as much or more",
                plan.max_cell_time.as_secs_f64()
            ));
            on_event(SweepEvent::Run(journal.record(row)?));
            continue;
        }
        let row = if stop() {
            None
        } else {
            if plan.accounting {
                tally.count(plan, i, running, run, place, stop)?;
            }
            let watch = IdleWatch::start(others_of(schedule, started, i));
            let mut row = measure(plan, running, run, place, journal.next_id, None, stop)?;
            row.disturbed_by = watch.finish();
            tally.fill(i, run, &mut row);
            Some(row)
        };
        // Ctrl-C cut this run short (or came before it): its numbers
        // describe part of a run, so it is not recorded (a resumed sweep
        // makes it again).
        let Some(row) = row.filter(|_| !stop()) else {
            journal.outcome.interrupted = true;
            break;
        };
        if row.error.starts_with(CAPPED) {
            let at = capped[i].get_or_insert(c);
            *at = (*at).min(c);
        }
        on_event(SweepEvent::Run(journal.record(row)?));
    }
    Ok(())
}

/// Every started target but the `i`th whose processes loadlab knows, as
/// (label, pid): what a run of the `i`th may be disturbed by.
fn others_of<'a>(
    schedule: &'a Schedule,
    started: &'a [Started],
    i: usize,
) -> impl Iterator<Item = (&'a str, u32)> + 'a {
    started.iter().enumerate().filter_map(move |(k, s)| {
        let pid = s.as_ref().filter(|_| k != i)?.0.pid?;
        Some((schedule.instances[k].config.target.as_str(), pid))
    })
}

/// How long the host's warm-up lasts at most, for a run of a duration:
/// what it warms up happens at the run's start.
const HOST_WARMUP_MAX: Duration = Duration::from_secs(1);

/// Unless `--warmup-runs` was given, one unrecorded burst like the
/// sweep's first run before it: a sweep's first burst runs slow whichever
/// target meets it (the host's and the client's first use), and that cost
/// would otherwise fall on the first target's first repeat. The burst is
/// the first run's connections with one request each (a duration capped
/// at HOST_WARMUP_MAX) and no slow clients: the cost is in the
/// connections, and an attack is not a warm-up. Not for sharded runs:
/// their load runs elsewhere, and a run's shards write where its row's
/// number says.
fn warm_up_host(
    plan: &SweepPlan,
    schedule: &Schedule,
    started: &[Started],
    stop: &(dyn Fn() -> bool + Sync),
    notes: &mut Vec<String>,
) {
    if !plan.host_warmup || plan.warmup_runs > 0 || plan.shards.is_some() || stop() {
        return;
    }
    // The first run whose target started: a target that did not start
    // makes no runs, and the next one would meet the cold host instead.
    let first = schedule.order.iter().find_map(|&(i, j)| {
        let (running, place) = started[i].as_ref()?;
        Some((running, place, &schedule.instances[i].runs[j]))
    });
    let Some((running, place, first)) = first else {
        return;
    };
    let mut run = first.clone();
    run.warmup = true;
    run.config.slow = SlowKind::None;
    run.config.slow_conns = 0;
    run.load = match run.load {
        Load::Duration(d) => Load::Duration(d.min(HOST_WARMUP_MAX)),
        Load::Requests(n) => Load::Requests(n.min(run.config.concurrency.max(1))),
    };
    // measure() fails only for sharded runs, which return above; a failed
    // warm-up is said in the note, never the sweep's error.
    let row = measure(plan, running, &run, place, 0, None, stop);
    // In sweep.json, not on stderr: a sweep that measured nothing still
    // says so in one line.
    let target = &run.config.target;
    notes.push(match row {
        _ if stop() => format!("the warm-up run against {target} was interrupted"),
        Ok(r) if r.error.is_empty() && r.complete > 0 => format!(
            "one unrecorded warm-up run against {target} before the first measured run (a sweep's first burst runs slow); --warmup-runs N records N per target instead"
        ),
        Ok(r) if r.error.is_empty() => {
            format!("the warm-up run against {target} failed: no request was answered")
        }
        Ok(r) => format!("the warm-up run against {target} failed: {}", r.error),
        Err(e) => format!("the warm-up run against {target} failed: {e:#}"),
    });
}

/// The file a slow reader asks nginx for (the models answer the same path
/// themselves), so every target holds the same response for it.
fn write_slow_read_file(docroot: &Path) -> anyhow::Result<()> {
    let path = docroot.join(SLOW_READ_PATH.trim_start_matches('/'));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, vec![b'x'; SLOW_READ_BYTES])?;
    Ok(())
}

/// When the host is sampled after the runs.
const AT_END: &str = "at the end";

/// The host's conditions now, with a warning when it was busy.
fn host_sample(when: &str, on_event: &mut dyn FnMut(SweepEvent)) -> HostSample {
    let sample = conditions::sample_host();
    if let Some(warning) = conditions::busy_warning(&sample, when, when == AT_END) {
        on_event(SweepEvent::Note(&warning));
    }
    sample
}

/// Creates `out` with an (empty) raw.csv and machine.json, and returns the
/// rows it already holds. Appending to a file that cannot be read back
/// would bury the new rows with the old: that is refused.
fn open_results(out: &Path) -> anyhow::Result<Vec<RawRow>> {
    std::fs::create_dir_all(out)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
    let existing = if out.join(raw::RAW_CSV).exists() {
        raw::read(out)
            .map_err(|e| anyhow::anyhow!("cannot resume into {}: {e:#}", out.display()))?
    } else {
        Vec::new()
    };
    // raw.csv exists from the start, so a sweep stopped before its first
    // run still renders a (empty) report.
    raw::append(out, &[])?;
    let machine_path = out.join(MACHINE_JSON);
    if !machine_path.exists() {
        std::fs::write(
            &machine_path,
            serde_json::to_string_pretty(&Machine::detect())? + "\n",
        )?;
    }
    Ok(existing)
}

/// One line for the user per reason (nginx or go not installed) and one
/// raw row per target left out. A resumed sweep has recorded the skip
/// already: once is enough for the report, and raw.csv should not grow
/// with every rerun.
fn record_skips(
    skipped: &[Skipped],
    existing: &[RawRow],
    journal: &mut Journal,
    on_event: &mut dyn FnMut(SweepEvent),
) -> anyhow::Result<()> {
    let mut reasons: Vec<&str> = Vec::new();
    for s in skipped {
        if !reasons.contains(&s.why) {
            reasons.push(s.why);
        }
    }
    for why in reasons {
        let these = skipped.iter().filter(|s| s.why == why);
        let names: Vec<&str> = these.clone().map(|s| s.config.target.as_str()).collect();
        let runs: usize = these.map(|s| s.runs).sum();
        on_event(SweepEvent::Note(&format!(
            "{why}; skipping {} ({runs} run{})",
            names.join(", "),
            if runs == 1 { "" } else { "s" }
        )));
    }
    for s in skipped {
        let mut row = record::config_row(&s.config);
        row.set_skipped(s.why);
        let recorded = existing.iter().any(|r| {
            (&r.experiment, &r.target, &r.error) == (&row.experiment, &row.target, &row.error)
        });
        if !recorded {
            journal.record(row)?;
        }
    }
    Ok(())
}

/// An instance as started: the running target and where the load
/// generator goes; None for a target that did not start.
type Started = Option<(Running, Placement)>;

/// Starts every instance before the first run; they run until the sweep
/// ends. A target that does not start is recorded once and its runs are
/// dropped. None when Ctrl-C came while one started.
fn start_all(
    plan: &SweepPlan,
    schedule: &Schedule,
    ctx: &StartContext,
    journal: &mut Journal,
    notes: &mut Vec<String>,
    stop: &(dyn Fn() -> bool + Sync),
    on_event: &mut dyn FnMut(SweepEvent),
) -> anyhow::Result<Option<Vec<Started>>> {
    let mut started = Vec::new();
    for inst in &schedule.instances {
        if stop() {
            return Ok(None);
        }
        match Running::start(inst.spec, ctx, inst.workers, inst.cpus, stop) {
            Ok(r) => {
                let (place, note) = Placement::of(inst, plan.client_cpus);
                if let Some(note) = note.filter(|n| !notes.contains(n)) {
                    on_event(SweepEvent::Note(&note));
                    notes.push(note);
                }
                started.push(Some((r, place)));
            }
            // Ctrl-C while it started: nothing about the target is known.
            Err(_) if stop() => return Ok(None),
            Err(e) => {
                let mut row = record::config_row(&inst.config);
                row.set_failed(format!("target did not start: {e:#}"));
                let row = journal.record(row)?;
                on_event(SweepEvent::Dropped {
                    runs: inst.runs.len(),
                    row,
                });
                started.push(None);
            }
        }
    }
    Ok(Some(started))
}

/// One line when the servers' syscalls cannot be counted here: which part
/// of the host stops it, and how to enable it.
fn accounting_note(plan: &SweepPlan) -> Option<String> {
    let why = crate::proc::syscalls::unavailable().filter(|_| plan.accounting)?;
    Some(format!(
        "no syscall or context-switch counts for the servers: {why}; the runs go on without them"
    ))
}
