//! The comparability header, said before any number: what differs
//! between A and B beyond the server (loadlab version, load settings,
//! machine, the CPU split, the host's busyness and steal). A different
//! machine is a warning; cells whose load differs are refused unless
//! forced, and the header says how many.

use super::matching::Matched;
use super::model::Side;
use crate::results::raw::Machine;

/// Lines to print first, and the warnings among them.
#[derive(Debug, Clone, Default)]
pub struct Header {
    pub lines: Vec<String>,
    pub warnings: Vec<String>,
}

pub fn header(a: &Side, b: &Side, m: &Matched<'_>, force: bool) -> Header {
    let mut h = Header::default();
    for (name, s) in [("A", a), ("B", b)] {
        h.lines.push(format!(
            "{name}: {} ({}, loadlab {})",
            s.source,
            s.kind.word(),
            s.version.as_deref().unwrap_or("unknown")
        ));
    }
    h.lines
        .push(same_or("loadlab version", &a.version, &b.version));
    machine(&mut h, a.machine.as_ref(), b.machine.as_ref());
    h.lines
        .push(format!("load settings: A {}; B {}", loads(a), loads(b)));
    let differ = m.pairs.iter().filter(|p| p.load_differs).count();
    if differ > 0 {
        h.warnings.push(if force {
            format!("{differ} cell(s) with different load settings shown (--force), marked `load differs`")
        } else {
            format!("{differ} cell(s) with different load settings refused (--force shows them)")
        });
    }
    for (name, s) in [("A", a), ("B", b)] {
        if !s.cpu_split.is_empty() {
            h.lines
                .push(format!("CPU split {name}: {}", s.cpu_split.join("; ")));
        }
        for l in &s.host {
            h.lines.push(format!("host {name} {l}"));
        }
    }
    h
}

fn same_or(what: &str, a: &Option<String>, b: &Option<String>) -> String {
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    if a == b {
        format!("{what}: same ({})", show(a))
    } else {
        format!("{what}: A {}, B {}", show(a), show(b))
    }
}

fn describe(m: &Machine) -> String {
    format!("{}, {} cores, kernel {}", m.cpu_model, m.cores, m.kernel)
}

/// Same machine in a line; another one also as a warning.
fn machine(h: &mut Header, a: Option<&Machine>, b: Option<&Machine>) {
    match (a, b) {
        (Some(x), Some(y)) if describe(x) == describe(y) => {
            h.lines.push(format!("machine: same ({})", describe(x)))
        }
        (Some(x), Some(y)) => {
            let line = format!("different machine: A {}; B {}", describe(x), describe(y));
            h.lines.push(line.clone());
            h.warnings.push(line);
        }
        _ => h.lines.push(format!(
            "machine: A {}; B {}",
            a.map_or("not recorded".into(), describe),
            b.map_or("not recorded".into(), describe)
        )),
    }
}

/// A side's distinct loads.
fn loads(s: &Side) -> String {
    let mut v: Vec<&str> = Vec::new();
    for c in &s.cells {
        if !v.contains(&c.load.as_str()) {
            v.push(&c.load);
        }
    }
    let v: Vec<&str> = v.into_iter().filter(|l| !l.is_empty()).collect();
    if v.is_empty() {
        "as the matrix".into()
    } else {
        v.join(", ")
    }
}
