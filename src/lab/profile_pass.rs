//! `sweep --profile`: after the measured runs, one unmeasured run per
//! target at its heaviest cell (the common rate of the bare run, else the
//! highest rate or concurrency; keep-alive off where both ran, since that
//! is where the models differ most) with perf sampling the target's
//! tree, drawn as a static flame graph under profiles/ and summed up in
//! profile.json. Unmeasured: perf's sampling and unwinding take CPU of
//! their own, which would fall on a measured run's figures.

use std::path::Path;
use std::time::Duration;

use super::measure::{measure, Placement};
use super::plan::{Instance, Load, PlannedRun, SweepPlan};
use crate::proc::profile::{self, Recording};
use crate::proc::target::Running;
use crate::results::profile::{self as file, Profile, ProfileFile, PROFILES_DIR};
use crate::sys::stacks::{flame_graph, summarize};

/// The profiled run lasts its cell, at most this long.
const PROFILE_MAX: Duration = Duration::from_secs(1);

/// Profiles each started target once (its first instance), writing
/// profile.json and the flame graphs into `out`; `note` hears one line
/// when the host cannot profile.
pub fn profile_all(
    plan: &SweepPlan,
    targets: &[(&Instance, &Running, &Placement)],
    out: &Path,
    stop: &(dyn Fn() -> bool + Sync),
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let mut found = ProfileFile::default();
    let why = profile::unavailable();
    if let Some(why) = &why {
        note(&format!(
            "no flame graphs: {why}; the sweep goes on without them"
        ));
    }
    std::fs::create_dir_all(out.join(PROFILES_DIR))?;
    let mut done: Vec<&str> = Vec::new();
    for &(inst, running, place) in targets {
        let label = inst.config.target.as_str();
        if done.contains(&label) || stop() {
            continue;
        }
        done.push(label);
        let Some(run) = heaviest(inst) else { continue };
        let made = match (&why, running.pid) {
            (Some(why), _) => Err(why.clone()),
            (None, None) => Err("loadlab did not start this server".to_string()),
            (None, Some(pid)) => one(plan, running, run, place, pid, out, stop),
        };
        match made {
            Ok(p) => found.profiles.push(p),
            Err(e) => found.not_profiled.push((label.to_string(), e)),
        }
    }
    file::write(out, &found)
}

/// The cell a target is profiled at.
fn heaviest<'a>(inst: &'a Instance) -> Option<&'a PlannedRun> {
    inst.runs.iter().max_by(|a, b| {
        let key = |r: &PlannedRun| {
            (
                r.config.rate.unwrap_or(0.0),
                r.config.concurrency,
                !r.config.keepalive,
            )
        };
        let (ka, kb) = (key(a), key(b));
        ka.0.total_cmp(&kb.0)
            .then(ka.1.cmp(&kb.1))
            .then(ka.2.cmp(&kb.2))
    })
}

/// "keep-alive off, c=50, 2500/s, /500B.html".
fn setting(run: &PlannedRun) -> String {
    let c = &run.config;
    let mut words = vec![
        format!("keep-alive {}", if c.keepalive { "on" } else { "off" }),
        format!("c={}", c.concurrency),
    ];
    words.extend(c.rate.map(|_| c.rate_label()));
    words.push(c.path.clone());
    words.join(", ")
}

fn one(
    plan: &SweepPlan,
    running: &Running,
    run: &PlannedRun,
    place: &Placement,
    pid: u32,
    out: &Path,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Profile, String> {
    let mut short = run.clone();
    short.warmup = true;
    if let Load::Duration(d) = short.load {
        short.load = Load::Duration(d.min(PROFILE_MAX));
    }
    let data = tempfile::Builder::new()
        .prefix("loadlab-perf-")
        .tempdir()
        .map_err(|e| format!("cannot make a directory for perf's data: {e}"))?;
    let recording = Recording::start(pid, &data.path().join("perf.data"))?;
    let row = measure(plan, running, &short, place, 0, None, stop);
    let recorded = recording.finish()?;
    let row = row.map_err(|e| format!("{e:#}"))?;
    if !row.error.is_empty() {
        return Err(format!("the profiled run failed: {}", row.error));
    }
    let target = &run.config.target;
    let loadlab = target.starts_with("model:");
    let s = summarize(&recorded.folded, recorded.left_out, loadlab);
    if s.samples == 0 {
        return Err("perf took no sample of the server".into());
    }
    let name = format!("flame-{}.svg", slug(target));
    let title = format!("{target}: {}", setting(run));
    let svg = flame_graph(&recorded.folded, &title)?;
    std::fs::write(out.join(PROFILES_DIR).join(&name), svg)
        .map_err(|e| format!("cannot write {name}: {e}"))?;
    Ok(Profile {
        target: target.clone(),
        setting: setting(run),
        samples: s.samples,
        left_out: s.left_out,
        kernel_pct: s.kernel_pct,
        user_in_loadlab_pct: s.user_in_loadlab_pct,
        top_kernel: s.top_kernel,
        top_user: s.top_user,
        areas: s.areas,
        flame_graph: name,
    })
}

/// A target label as a file name: letters, digits and dashes.
fn slug(target: &str) -> String {
    target
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}
