//! One check of a target: the answers it gives alone (the references the
//! other checks compare with), then each family in turn within the time
//! allowed, stopping early on Ctrl-C or when the target stops being a
//! server.

use std::time::{Duration, Instant};

use super::catalogue::{Family, DEFECTS};
use super::outcome::{CheckReport, Finding};
use super::probe::{head_of, Answer, Probe, Transcript, Want};
use super::subject::{Canary, Options, Pace, Refs, Subject};
use super::{concurrency, connections, framing, process, robustness, safety};

/// A target as check is given it.
pub struct Target {
    pub name: String,
    pub probe: Probe,
    pub pid: Option<u32>,
    pub canary: Option<Canary>,
}

/// Checks `target`; `stop` (Ctrl-C) ends it between steps.
pub fn run(target: Target, opts: &Options, stop: &(dyn Fn() -> bool + Sync)) -> CheckReport {
    let start = Instant::now();
    let pace = if opts.quick { Pace::QUICK } else { Pace::FULL };
    let url = format!("http://{}{}", target.probe.host, target.probe.path);
    let mut report = CheckReport {
        target: target.name,
        url,
        findings: Vec::new(),
        elapsed: Duration::ZERO,
        unusable: None,
        interrupted: false,
    };
    let p = &target.probe;
    // The first GET, watched after its answer: the framing checks' evidence.
    let first = p.exchange(
        &p.get(&p.path),
        Want::answers(1).within(pace.answer).linger(pace.watch),
    );
    if let Some(why) = not_a_server(&first) {
        report.unusable = Some(why);
        report.elapsed = start.elapsed();
        return report;
    }
    let refs = references(p, &first, pace);
    if let Some(why) = not_the_path(p, &refs.path) {
        report.unusable = Some(why);
        report.elapsed = start.elapsed();
        return report;
    }
    let subject = Subject {
        probe: target.probe.clone(),
        pid: target.pid,
        canary: target.canary,
        refs,
        pace,
        stop,
        only: opts.only.clone(),
        quick: opts.quick,
    };
    type Step = fn(&Subject, &Transcript, &mut Vec<Finding>);
    let steps: [(Family, Step); 10] = [
        (Family::Framing, framing::check),
        (Family::Connections, connections::check),
        (Family::Requests, |s, _, o| {
            robustness::partial_request(s, o)
        }),
        (Family::Robustness, |s, _, o| robustness::bad_input(s, o)),
        (Family::Concurrency, |s, _, o| {
            concurrency::one_at_a_time(s, o)
        }),
        (Family::Concurrency, |s, _, o| concurrency::crossed(s, o)),
        (Family::Concurrency, |s, _, o| concurrency::burst(s, o)),
        (Family::Concurrency, |s, _, o| process::busy_when_idle(s, o)),
        (Family::Concurrency, |s, _, o| process::fd_leak(s, o)),
        (Family::Safety, |s, _, o| {
            safety::traversal(s, o);
            safety::slowloris(s, o)
        }),
    ];
    for (family, step) in steps {
        if opts.quick && !family.quick() {
            continue;
        }
        if stop() {
            report.interrupted = true;
            break;
        }
        let mut found = Vec::new();
        if start.elapsed() >= opts.limit {
            for d in DEFECTS.iter().filter(|d| d.family == family) {
                if subject.wants(d.id) && report.finding(d.id).is_none() {
                    found.push(Finding::skip(
                        d.id,
                        format!("not begun: the check's {} s ran out", opts.limit.as_secs()),
                    ));
                }
            }
        } else {
            step(&subject, &first, &mut found);
        }
        report.findings.extend(found);
        if let Some(exit) = subject.exited() {
            report.unusable = Some(format!("the server's {exit} while it was checked"));
            break;
        }
    }
    report.elapsed = start.elapsed();
    report
}

/// Why the first exchange shows no HTTP server at all: nothing listening,
/// nothing said, or TLS spoken back.
fn not_a_server(first: &Transcript) -> Option<String> {
    use super::probe::End;
    if let End::NotMade(why) = &first.end {
        return Some(format!("not a server: {why}"));
    }
    if first.raw.is_empty() {
        return Some(format!(
            "not a server: no byte came back to a GET ({})",
            first.ending()
        ));
    }
    if matches!(first.raw[0], 0x15 | 0x16) {
        return Some(
            "not a server for plain HTTP: it answered with a TLS record (is it https?)".into(),
        );
    }
    None
}

/// A path whose answer was read but is not 2xx or 3xx gives the checks
/// nothing to compare (a TLS port answering plain HTTP with 400, a wrong
/// `--path`).
fn not_the_path(p: &Probe, alone: &Answer) -> Option<String> {
    let status = alone.status;
    (status != 0 && !(200..400).contains(&status)).then(|| {
        format!(
            "GET {} answered {status} ({}): check needs a path that answers 2xx or 3xx (--path)",
            p.path,
            super::probe::shown(&alone.body[..alone.body.len().min(120)])
        )
    })
}

/// The answers the path and a missing path get alone: the path's from the
/// first GET and once more, the missing path's twice.
fn references(p: &Probe, first: &Transcript, pace: Pace) -> Refs {
    let alone = |path: &str| -> Option<Answer> {
        let t = p.exchange(&p.get_close(path), Want::answers(1).within(pace.answer));
        t.answers.into_iter().next()
    };
    let empty = || head_of(b"HTTP/1.1 000 none\r\n\r\n").expect("a head");
    let path1 = first.answers.first().cloned().or_else(|| alone(&p.path));
    let path2 = alone(&p.path);
    let miss1 = alone(&p.missing);
    let miss2 = alone(&p.missing);
    let same = |a: &Option<Answer>, b: &Option<Answer>| match (a, b) {
        (Some(a), Some(b)) => a.same_as(b),
        _ => false,
    };
    Refs {
        stable: same(&path1, &path2) && same(&miss1, &miss2),
        path: path1.unwrap_or_else(empty),
        missing: miss1.unwrap_or_else(empty),
    }
}
