//! The Findings: short sentences generated from the summary that say what
//! the results mean, and no more than the data supports. In order: who
//! leads at each concurrency and by how much, where each target
//! saturates, where p99 grows tenfold, which cells are flagged and what
//! that does to the comparison, a busy host, and, when nothing can be
//! concluded, why.

use std::collections::HashSet;

use serde::Serialize;

mod capacity;
mod cost;
pub mod defects;
mod evidence;
mod undecided;
pub mod why;
mod work;

use super::num::fixed;
use super::summary::{Group, Status, SummaryRow, SweepSummary, Varies, BUSY_PCT};
use crate::results::capacity::CapacityFile;
use crate::results::config::RunConfig;
use crate::results::raw::Machine;
use crate::results::sweep_info::SweepInfo;
use crate::stats::ratio::paired as paired_ratio;

/// What a sentence is about; tests and pages may pick by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Capacity within the objective, highest first, bounds apart.
    Capacity,
    /// Server CPU per request, cheapest first, in groups that cannot be
    /// told apart.
    Cost,
    /// Which target leads at one concurrency, or no clear difference.
    Lead,
    /// Where requests/s stops rising beyond its interval.
    Knee,
    /// Where p99 latency grows tenfold over the lowest concurrency's.
    Latency,
    /// p99 at an offered rate, lowest first, in groups that cannot be
    /// told apart: latency at equal load.
    LatencyAtRate,
    Failed,
    #[serde(rename = "non-2xx")]
    Non2xx,
    /// Open loop: cells that put less than 95 % of the offered rate on
    /// the wire.
    RateShort,
    ClientBound,
    CpuSaturated,
    Noisy,
    /// Cells shorter than 100 ms: their CPU figures are rough.
    CpuRough,
    /// What slow clients did to a target's client, beside it alone.
    SlowClients,
    BusyHost,
    /// Answers that broke a rule yet counted as answered.
    Violations,
    /// What the kernel's TCP counters say: a listen queue that
    /// overflowed, other traffic beside the runs.
    Kernel,
    /// A target that burned CPU while another was measured.
    BusyIdle,
    /// Why the costs differ: syscalls and context switches per request
    /// (unless `sweep --no-accounting`).
    Work,
    /// This sweep against an earlier run (`--compare-to`).
    Compare,
    /// What the rankings could not decide, and why: bounds the client
    /// set, differences within the rounds' noise.
    Undecided,
    /// A defect the check before the runs found in a target.
    Defect,
    /// Nothing can be concluded, and why.
    Nothing,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub kind: Kind,
    pub text: String,
}

/// At most this many cells are named in one sentence; the rest counted.
const NAMED: usize = 4;

/// The findings of a sweep, in the order the report shows them.
pub fn findings(
    s: &SweepSummary,
    info: Option<&SweepInfo>,
    machine: Option<&Machine>,
    capacity: Option<&CapacityFile>,
) -> Vec<Finding> {
    let words = Words::new(s);
    let cells = cells(s);
    // What is decided leads: capacity, the cost ranking, then who serves
    // most.
    let mut caps = capacity.map(capacity::findings).unwrap_or_default();
    let mut costs = cost::rankings(&cells, &words);
    let leads = leads(&cells, &words);
    let knees = knees(&cells, &words);
    let concluded = caps.decided || costs.decided || !leads.is_empty() || !knees.is_empty();
    let mut out = std::mem::take(&mut caps.findings);
    out.append(&mut costs.findings);
    out.extend(leads);
    out.extend(knees);
    // A defect explains the numbers: it goes first, but concludes nothing.
    out.splice(
        0..0,
        defects::sentences(info.map_or(&[][..], |i| &i.diagnoses)),
    );
    out.extend(latency(&cells, &words));
    out.extend(undecided::finding(&[&caps, &costs]));
    out.extend(work::sentences(&cells, &words));
    out.extend(super::slow::sentences(s).into_iter().map(|text| Finding {
        kind: Kind::SlowClients,
        text,
    }));
    out.extend(flagged(s, &cells, &words));
    out.extend(evidence::sentences(s));
    out.extend(evidence::busy_host(info, machine));
    // A search alone has no cells: its bounds are said above.
    if !(concluded || cells.is_empty() && capacity.is_some()) {
        out.push(nothing(s, &cells));
    }
    out
}

/// Every configuration of `s`, in summary order.
fn cells(s: &SweepSummary) -> Vec<Cell<'_>> {
    let rows = s.groups.iter().zip(&s.rows);
    rows.map(|(g, r)| Cell { g, r }).collect()
}

/// One configuration: its runs and its summary row.
#[derive(Clone, Copy)]
struct Cell<'a> {
    g: &'a Group,
    r: &'a SummaryRow,
}

impl Cell<'_> {
    /// Usable for comparisons: its throughput leaves no work out, and it
    /// has an interval.
    fn comparable(&self) -> bool {
        !self.r.status.is_broken() && self.r.runs > 1
    }

    fn rps(&self) -> String {
        match self.r.rps_ci() {
            Some((_, hi)) => format!(
                "{} ± {} requests/s",
                fixed(self.r.rps_mean, 0),
                fixed(hi - self.r.rps_mean, 0)
            ),
            None => format!("{} requests/s (1 run)", fixed(self.r.rps_mean, 0)),
        }
    }
}

/// How cells and settings are named: only the dimensions that vary.
struct Words {
    experiments: bool,
    varies: Varies,
    /// (experiment, target) that ran with more than one worker count.
    multi_workers: HashSet<(String, String)>,
}

impl Words {
    fn new(s: &SweepSummary) -> Words {
        let mut seen: Vec<(&str, &str, u64)> = Vec::new();
        let mut multi_workers = HashSet::new();
        for g in &s.groups {
            let k = &g.key;
            if seen
                .iter()
                .any(|(e, t, w)| *e == k.experiment && *t == k.target && *w != k.workers)
            {
                multi_workers.insert((k.experiment.clone(), k.target.clone()));
            }
            seen.push((&k.experiment, &k.target, k.workers));
        }
        Words {
            experiments: s.experiments.len() > 1,
            varies: Varies::of(s.groups.iter().map(|g| &g.key)),
            multi_workers,
        }
    }

    /// "e1, keep-alive on, c=50": the setting a comparison holds in.
    fn setting(&self, k: &RunConfig, with_c: bool) -> String {
        let v = &self.varies;
        let mut parts = Vec::new();
        if self.experiments {
            parts.push(k.experiment.clone());
        }
        if v.path {
            parts.push(k.path.clone());
        }
        if v.keepalive {
            parts.push(format!(
                "keep-alive {}",
                if k.keepalive { "on" } else { "off" }
            ));
        }
        if v.cpus {
            parts.push(match k.cpus {
                0 => "all CPUs".to_string(),
                n => format!("{n} CPUs"),
            });
        }
        if v.load {
            parts.push(k.load_label());
        }
        if v.slow {
            parts.push(format!("slow clients {}", k.slow.label(k.slow_conns)));
        }
        if v.rate {
            parts.push(format!("offered {}", k.rate_label()));
        }
        if with_c {
            parts.push(format!("c={}", k.concurrency));
        }
        parts.join(", ")
    }

    /// The target, with its worker count when it ran with several.
    fn target(&self, k: &RunConfig) -> String {
        if self
            .multi_workers
            .contains(&(k.experiment.clone(), k.target.clone()))
        {
            format!("{} with {} workers", k.target, k.workers)
        } else {
            k.target.clone()
        }
    }

    /// "nginx (keep-alive on, c=50)"; the target alone for a target
    /// that never started (its failed run has no concurrency).
    fn cell(&self, k: &RunConfig) -> String {
        if k.concurrency == 0 {
            return self.target(k);
        }
        format!("{} ({})", self.target(k), self.setting(k, true))
    }
}

/// "At X: " or nothing when no dimension varies.
fn at(setting: &str) -> String {
    if setting.is_empty() {
        String::new()
    } else {
        format!("At {setting}: ")
    }
}

/// Cells grouped by `key`, sets in the order their first cell appears.
fn sets<'a>(cells: &[Cell<'a>], key: impl Fn(&RunConfig) -> RunConfig) -> Vec<Vec<Cell<'a>>> {
    let mut keys: Vec<RunConfig> = Vec::new();
    let mut out: Vec<Vec<Cell>> = Vec::new();
    for c in cells {
        let k = key(&c.g.key);
        match keys.iter().position(|x| *x == k) {
            Some(i) => out[i].push(*c),
            None => {
                keys.push(k);
                out.push(vec![*c]);
            }
        }
    }
    out
}

/// Everything but the target (and its workers): the cells one
/// concurrency compares.
fn but_target(k: &RunConfig) -> RunConfig {
    RunConfig {
        target: String::new(),
        workers: 0,
        ..k.clone()
    }
}

/// Everything but the concurrency: one target's line.
fn line_of(k: &RunConfig) -> RunConfig {
    RunConfig {
        concurrency: 0,
        ..k.clone()
    }
}

/// Everything but target and concurrency: where lines sit side by side.
fn setting_of(k: &RunConfig) -> RunConfig {
    but_target(&line_of(k))
}

fn leads(cells: &[Cell], w: &Words) -> Vec<Finding> {
    let mut out = Vec::new();
    for set in sets(cells, but_target) {
        // At an offered rate every server that keeps it serves the same
        // requests/s: there, latency and cost tell servers apart.
        if set[0].g.key.rate.is_some() {
            continue;
        }
        let mut ok: Vec<Cell> = set.into_iter().filter(Cell::comparable).collect();
        if ok.len() < 2 {
            continue;
        }
        ok.sort_by(|a, b| b.r.rps_mean.total_cmp(&a.r.rps_mean));
        let (first, second) = (ok[0], ok[1]);
        let Some(ratio) = paired_ratio(&first.g.rps_by_round(), &second.g.rps_by_round()) else {
            continue;
        };
        let Some((lo, hi)) = ratio.ci95() else {
            continue;
        };
        let text = if ratio.holds_one() {
            format!(
                "{}no clear difference between {} ({}) and {} ({}): their paired ratio {} (95 % interval {} to {}) holds 1.",
                at(&w.setting(&first.g.key, true)),
                w.target(&first.g.key),
                first.rps(),
                w.target(&second.g.key),
                second.rps(),
                fixed(ratio.mean, 2),
                fixed(lo, 2),
                fixed(hi, 2)
            )
        } else {
            format!(
                "{}{} leads with {}, {}× {} (95 % interval {} to {}).",
                at(&w.setting(&first.g.key, true)),
                w.target(&first.g.key),
                first.rps(),
                fixed(ratio.mean, 2),
                w.target(&second.g.key),
                fixed(lo, 2),
                fixed(hi, 2)
            )
        };
        out.push(Finding {
            kind: Kind::Lead,
            text: upper_first(&text),
        });
    }
    out
}

/// The concurrency after which a line's requests/s no longer rises
/// beyond its interval: the lowest one that no higher concurrency beats
/// by more than its interval's top (a dip followed by a clear rise is not
/// a knee); `None` when it rises all the way.
fn knee(line: &[Cell]) -> Option<u64> {
    let last = line.len().checked_sub(1)?;
    (0..last)
        .find(|&i| {
            let top = line[i].r.rps_ci().map_or(f64::INFINITY, |c| c.1);
            line[i + 1..].iter().all(|c| c.r.rps_mean <= top)
        })
        .map(|i| line[i].g.key.concurrency)
}

fn knees(cells: &[Cell], w: &Words) -> Vec<Finding> {
    let mut out = Vec::new();
    for setting in sets(cells, setting_of) {
        let mut knees: Vec<(Option<u64>, Vec<String>)> = Vec::new();
        let mut top = 0;
        for mut line in sets(&setting, line_of) {
            line.retain(Cell::comparable);
            line.sort_by_key(|c| c.g.key.concurrency);
            if line.len() < 2 {
                continue;
            }
            top = top.max(line[line.len() - 1].g.key.concurrency);
            let k = knee(&line);
            let mut name = w.target(&line[0].g.key);
            // A knee read off a noisy cell's wide interval is a weak one.
            if line
                .iter()
                .any(|c| Some(c.g.key.concurrency) == k && c.r.noisy)
            {
                name.push_str(" (noisy, so uncertain)");
            }
            match knees.iter_mut().find(|(x, _)| *x == k) {
                Some((_, names)) => names.push(name),
                None => knees.push((k, vec![name])),
            }
        }
        if knees.is_empty() {
            continue;
        }
        knees.sort_by_key(|(k, _)| k.unwrap_or(u64::MAX));
        let parts: Vec<String> = knees
            .iter()
            .map(|(k, names)| match k {
                Some(c) => format!("{} after c={c}", list(names)),
                None => format!(
                    "{} still {} at c={top}, the highest measured",
                    list(names),
                    if names.len() == 1 { "rises" } else { "rise" }
                ),
            })
            .collect();
        let setting = w.setting(&setting[0].g.key, false);
        let text = format!(
            "Where requests/s stops rising beyond its interval{}: {}.",
            if setting.is_empty() {
                String::new()
            } else {
                format!(" ({setting})")
            },
            parts.join("; ")
        );
        out.push(Finding {
            kind: Kind::Knee,
            text,
        });
    }
    out
}

fn ms(v: f64) -> String {
    fixed(v, if v >= 10.0 { 1 } else { 3 })
}

fn latency(cells: &[Cell], w: &Words) -> Vec<Finding> {
    let mut out = Vec::new();
    for setting in sets(cells, setting_of) {
        let mut grew = Vec::new();
        let mut from = None;
        for mut line in sets(&setting, line_of) {
            line.retain(|c| !c.r.status.is_broken());
            line.sort_by_key(|c| c.g.key.concurrency);
            let Some(low) = line.first().filter(|c| c.r.p99_ms_mean > 0.0) else {
                continue;
            };
            let base = low.r.p99_ms_mean;
            if let Some(hit) = line.iter().find(|c| c.r.p99_ms_mean >= 10.0 * base) {
                from = Some(low.g.key.concurrency);
                grew.push(format!(
                    "{} by c={} ({} → {} ms)",
                    w.target(&hit.g.key),
                    hit.g.key.concurrency,
                    ms(base),
                    ms(hit.r.p99_ms_mean)
                ));
            }
        }
        let Some(from) = from else {
            continue;
        };
        let setting = w.setting(&setting[0].g.key, false);
        out.push(Finding {
            kind: Kind::Latency,
            text: format!(
                "p99 latency grows tenfold over its value at the lowest concurrency (c={from}){}: {}.",
                if setting.is_empty() {
                    String::new()
                } else {
                    format!(", {setting}")
                },
                grew.join(", ")
            ),
        });
    }
    out
}

/// "a, b and c".
fn list(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// "3 cells: a, b, c" with at most `NAMED` named.
fn cells_named(names: &[String]) -> String {
    let n = names.len();
    let shown: Vec<String> = names.iter().take(NAMED).cloned().collect();
    let more = if n > NAMED {
        format!(" and {} more", n - NAMED)
    } else {
        String::new()
    };
    format!(
        "{n} cell{} ({}{more})",
        if n == 1 { "" } else { "s" },
        shown.join(", ")
    )
}

/// What each flag means for the comparison and what to do about it.
fn flag_text(kind: Kind, cells: &str) -> String {
    match kind {
        Kind::Failed => format!(
            "Failed: {cells} had failed requests or runs that could not be made; their requests/s counts answered requests only, and they are left out of the comparisons above (see Failed runs)."
        ),
        Kind::Non2xx => format!(
            "Non-2xx: {cells} got answers other than 2xx/3xx (a wrong path answers 404); those answers are not counted as throughput, and these cells are left out of the comparisons above."
        ),
        Kind::RateShort => format!(
            "Rate-short: {cells} put less than {:.0} % of the offered rate on the wire, so their latencies describe a lighter load than the rate they are listed under; the server or the load generator could not keep up (see client-bound beside them, if any).",
            crate::stats::RATE_KEPT * 100.0
        ),
        Kind::ClientBound => format!(
            "Client-bound: in {cells} a load thread was busy at least {BUSY_PCT:.0} % of the run, so the client, not the server, set the rate; do not read these as the server's speed. Give client and server their own CPUs (--cpus), use more client threads (--threads), or run the client on another machine."
        ),
        Kind::CpuSaturated => format!(
            "CPU-saturated: in {cells} the CPUs client and server share were at least {BUSY_PCT:.0} % busy, so the result measures the pair, not the server. Split the CPUs with --cpus, or run the client on another machine."
        ),
        Kind::Noisy => format!(
            "Noisy: the repeats of {cells} disagree (requests/s varies by more than 10 %), so their intervals are wide and differences there are uncertain. Run more repeats (--repeat) or on a quieter host."
        ),
        _ => format!(
            "CPU rough: {cells} ran for less than 100 ms, so their server CPU figures are rough."
        ),
    }
}

fn flagged(s: &SweepSummary, cells: &[Cell], w: &Words) -> Vec<Finding> {
    let kinds = [
        (Kind::Failed, Some(Status::Failed)),
        (Kind::Non2xx, Some(Status::Non2xx)),
        (Kind::RateShort, Some(Status::RateShort)),
        (Kind::ClientBound, Some(Status::ClientBound)),
        (Kind::CpuSaturated, Some(Status::CpuSaturated)),
        (Kind::Noisy, Some(Status::Noisy)),
        (Kind::CpuRough, None),
    ];
    let mut out = Vec::new();
    for (kind, status) in kinds {
        let mut names: Vec<String> = cells
            .iter()
            .filter(|c| match status {
                Some(st) => c.r.flags().contains(&st),
                None => c.r.cpu_rough,
            })
            .map(|c| w.cell(&c.g.key))
            .collect();
        if kind == Kind::Failed {
            // Configurations with no measured run at all have no cell.
            for f in &s.failed {
                let k = RunConfig::of(f);
                let name = w.cell(&k);
                if !cells.iter().any(|c| c.g.key == k) && !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        if !names.is_empty() {
            out.push(Finding {
                kind,
                text: flag_text(kind, &cells_named(&names)),
            });
        }
    }
    out
}

fn nothing(s: &SweepSummary, cells: &[Cell]) -> Finding {
    let usable: Vec<&Cell> = cells.iter().filter(|c| !c.r.status.is_broken()).collect();
    let text = if cells.is_empty() && !s.failed.is_empty() {
        format!(
            "Nothing can be concluded: every run failed ({} could not be made; see Failed runs).",
            s.failed.len()
        )
    } else if cells.is_empty() {
        "Nothing can be concluded: there are no measured runs.".to_string()
    } else if usable.is_empty() {
        "Nothing can be concluded: every cell failed or got non-2xx answers, so none measured throughput.".to_string()
    } else if usable.iter().all(|c| c.r.runs < 2) {
        "Nothing can be concluded about differences: each cell ran once, so there is no interval to tell a difference from noise. Run with --repeat 3 or more.".to_string()
    } else {
        "Nothing can be concluded: no setting has two targets or two concurrencies with usable repeats to compare.".to_string()
    };
    Finding {
        kind: Kind::Nothing,
        text,
    }
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests;
