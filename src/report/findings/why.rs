//! The Why section: per target, what a request costs it and where that
//! goes, setting by setting (server CPU per request and its kernel share,
//! syscalls by kind, context switches, run-queue wait, ring submissions),
//! each beside the cheapest target counted at the same setting, after the
//! model's own account of how it serves. Where the cost ranking says who
//! costs more, this says what the extra work is.

use super::work::kinds;
use super::{but_target, cells, sets, Cell, Words};
use crate::report::num::fixed;
use crate::report::summary::{Status, SweepSummary};
use crate::results::profile::{Profile, ProfileFile, Share};

/// One target's part of the section.
#[derive(Debug, Clone, PartialEq)]
pub struct Why {
    /// The target as raw.csv names it.
    pub label: String,
    /// As the report names it (with its workers when they vary).
    pub target: String,
    /// How the model serves, from the registry (its first sentence).
    pub about: Option<String>,
    /// One sentence per setting it was counted at.
    pub lines: Vec<String>,
    /// Its profile (`sweep --profile`), or why it has none.
    pub profile: Option<Profile>,
    pub not_profiled: Option<String>,
    /// The flame graph's SVG, as the report read it.
    pub flame_svg: Option<String>,
}

/// The section, targets in the order they first appear, each with its
/// profile when there is one; empty when no cell's syscalls were counted
/// (`--no-accounting`, or a host that forbids it: the sweep's notes say
/// why) and nothing was profiled.
pub fn section(s: &SweepSummary, profiles: Option<&ProfileFile>) -> Vec<Why> {
    let w = Words::new(s);
    let mut cells = cells(s);
    cells.retain(|c| c.r.syscalls_per_req.is_some());
    let mut out: Vec<Why> = Vec::new();
    for set in sets(&cells, but_target) {
        let cpu = |c: &Cell| {
            c.r.server_cpu_us_per_req
                .filter(|_| !c.r.status.is_broken())
        };
        let cheapest = set
            .iter()
            .filter(|c| cpu(c).is_some())
            .min_by(|a, b| cpu(a).unwrap_or(0.0).total_cmp(&cpu(b).unwrap_or(0.0)))
            .filter(|_| set.len() > 1);
        for c in &set {
            let target = w.target(&c.g.key);
            let line = sentence(c, cheapest.filter(|k| k.g.key != c.g.key), &w);
            match out.iter_mut().find(|y| y.target == target) {
                Some(y) => y.lines.push(line),
                None => out.push(Why {
                    lines: vec![line],
                    ..Why::of(&c.g.key.target, target)
                }),
            }
        }
    }
    let Some(f) = profiles else { return out };
    for p in &f.profiles {
        match out.iter_mut().find(|y| y.label == p.target) {
            Some(y) => y.profile = Some(p.clone()),
            None => out.push(Why {
                profile: Some(p.clone()),
                ..Why::of(&p.target, p.target.clone())
            }),
        }
    }
    for (target, why) in &f.not_profiled {
        if let Some(y) = out.iter_mut().find(|y| y.label == *target) {
            y.not_profiled = Some(why.clone());
        }
    }
    out
}

impl Why {
    /// What its profile says, or why it has none; None when it was not
    /// asked for.
    pub fn profile_text(&self) -> Option<String> {
        if let Some(why) = &self.not_profiled {
            return Some(format!("Not profiled: {why}."));
        }
        let p = self.profile.as_ref()?;
        let list = |v: &[Share]| {
            let names: Vec<String> = v
                .iter()
                .take(5)
                .map(|s| format!("{} {} %", s.function, fixed(s.pct, 1)))
                .collect();
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        };
        let areas: Vec<String> = p
            .areas
            .iter()
            .map(|a| format!("{} {} %", a.function, fixed(a.pct, 0)))
            .collect();
        let mut t = format!(
            "Profile of one unmeasured run ({}; {} samples): {} % of its CPU samples in the kernel{}. \
             Top kernel functions by own time: {}. Top user functions: {}.",
            p.setting,
            p.samples,
            fixed(p.kernel_pct, 0),
            match areas.is_empty() {
                true => String::new(),
                false => format!("; samples passing through {}", areas.join(", ")),
            },
            list(&p.top_kernel),
            list(&p.top_user)
        );
        if let Some(pct) = p.user_in_loadlab_pct {
            t.push_str(&format!(
                " {} % of its user-space samples have a whole stack down to a loadlab function.",
                fixed(pct, 0)
            ));
        }
        if p.left_out > 0 {
            t.push_str(&format!(
                " {} more samples perf could not attribute to a thread are left out.",
                p.left_out
            ));
        }
        Some(t)
    }

    /// A target's part with nothing in it yet.
    fn of(label: &str, target: String) -> Why {
        Why {
            label: label.to_string(),
            about: about(label),
            target,
            lines: Vec::new(),
            profile: None,
            not_profiled: None,
            flame_svg: None,
        }
    }
}

/// The registry's first sentence on the target's model (or Go's server).
fn about(target: &str) -> Option<String> {
    let (_, text) = crate::report::explain::models_of([target])
        .into_iter()
        .next()?;
    let first = text.split(". ").next().unwrap_or(text);
    Some(format!("{}.", first.trim_end_matches('.')))
}

/// "keep-alive off: 79.3 µs of server CPU per request, 3.10 x
/// model:event-loop's 25.6, 71 % in the kernel; per request 25.1 syscalls
/// (other 19.1, clone+exit 2.00, ...) against 4.05, 1.10 context switches
/// against 0.30, 3.2 µs waiting for a CPU."
fn sentence(c: &Cell, cheapest: Option<&Cell>, w: &Words) -> String {
    let r = c.r;
    let setting = w.setting(&c.g.key, true);
    let mut parts = Vec::new();
    if let Some(cpu) = r.server_cpu_us_per_req {
        let mut p = format!("{} µs of server CPU per request", fixed(cpu, 1));
        if let Some((k, base)) = cheapest.and_then(|k| Some((k, k.r.server_cpu_us_per_req?))) {
            if base > 0.0 {
                p.push_str(&format!(
                    ", {} x {}'s {}",
                    fixed(cpu / base, 2),
                    w.target(&k.g.key),
                    fixed(base, 1)
                ));
            }
        }
        if let Some(user) = r.cpu_user_pct {
            p.push_str(&format!(", {} % in the kernel", fixed(100.0 - user, 0)));
        }
        parts.push(p);
    }
    let against = |f: fn(&Cell) -> Option<f64>, d| match cheapest.and_then(f) {
        Some(v) => format!(" against {}", fixed(v, d)),
        None => String::new(),
    };
    let mut work = format!(
        "per request {} syscalls ({}){}",
        fixed(r.syscalls_per_req.unwrap_or(0.0), 2),
        match kinds(c) {
            k if k.is_empty() => "none above 0.05".to_string(),
            k => k,
        },
        against(|k| k.r.syscalls_per_req, 2)
    );
    if let Some(sw) = r.switches_counted_per_req {
        work.push_str(&format!(
            ", {} context switches{}",
            fixed(sw, 2),
            against(|k| k.r.switches_counted_per_req, 2)
        ));
    }
    // /proc's forced switches, over the measured runs: a lower bound.
    if let Some(forced) = r.involuntary_per_req.filter(|&f| f >= 0.005) {
        work.push_str(&format!(
            " ({} forced by the scheduler, at least)",
            fixed(forced, 2)
        ));
    }
    if let Some(q) = r.runq_wait_us_per_req {
        work.push_str(&format!(", {} µs waiting for a CPU", fixed(q, 1)));
    }
    if let Some(ring) = &r.ring_ops_per_req {
        work.push_str(&format!(", ring entries {}", ring_words(ring)));
    }
    parts.push(work);
    let caveat = match r.status {
        Status::Ok => String::new(),
        s => format!(" (this cell is {}: read its figures with care)", s.word()),
    };
    let at = if setting.is_empty() {
        String::new()
    } else {
        format!("{setting}: ")
    };
    format!("{at}{}{caveat}.", parts.join("; "))
}

/// "send 1.00" from "recv=0.000 send=1.000": the entries at least 0.005
/// per request.
fn ring_words(ops: &str) -> String {
    let words: Vec<String> = crate::results::accounting::ring_ops::<f64>(ops)
        .into_iter()
        .filter(|(_, n)| *n >= 0.005)
        .map(|(op, n)| format!("{op} {}", fixed(n, 2)))
        .collect();
    if words.is_empty() {
        "below 0.01".into()
    } else {
        words.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_with(left_out: u64) -> String {
        let mut y = Why::of("event-loop", "model:event-loop".into());
        y.profile = Some(Profile {
            target: "model:event-loop".into(),
            setting: "keep-alive on, c=50".into(),
            samples: 400,
            left_out,
            kernel_pct: 80.0,
            user_in_loadlab_pct: None,
            top_kernel: Vec::new(),
            top_user: Vec::new(),
            areas: Vec::new(),
            flame_graph: "flame-model-event-loop.svg".into(),
        });
        y.profile_text().expect("a profile's text")
    }

    #[test]
    fn samples_a_profile_left_out_are_said() {
        let said = " 3 more samples perf could not attribute to a thread are left out.";
        assert!(text_with(3).ends_with(said), "{}", text_with(3));
        assert!(!text_with(0).contains("left out"), "{}", text_with(0));
    }
}
