//! One check of a target: the answers it gives alone (the references the
//! other checks compare with), then each family in turn within the time
//! allowed, stopping early on Ctrl-C or when the target stops being a
//! server.

use std::time::{Duration, Instant};

use super::catalogue::Family;
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
        deadline: start + opts.limit,
        only: opts.only.clone(),
        quick: opts.quick,
    };
    let mut why_not: Option<String> = None;
    for step in STEPS {
        if opts.quick && !step.family.quick() {
            continue;
        }
        if stop() {
            report.interrupted = true;
            break;
        }
        // Framing's evidence is read already: only later steps wait.
        if why_not.is_none() && step.family != Family::Framing && start.elapsed() >= opts.limit {
            why_not = Some(format!(
                "not begun: the check's {} s ran out",
                opts.limit.as_secs()
            ));
        }
        let unreadable = (step.family != Family::Framing && !step.needs_no_answer)
            .then(|| unreadable(&first, &report.findings))
            .flatten();
        match (&why_not, unreadable) {
            (Some(why), _) => skip_all(&subject, step.ids, why, &mut report.findings),
            (None, Some(cause)) => {
                let why =
                    format!("not judged: no answer of this server could be read whole ({cause})");
                skip_all(&subject, step.ids, &why, &mut report.findings)
            }
            (None, None) => {
                let mut found = Vec::new();
                (step.run)(&subject, &first, &report.findings, &mut found);
                report.findings.extend(found);
            }
        }
        if why_not.is_none() {
            if let Some(exit) = subject.exited() {
                report.unusable = Some(format!("the server's {exit} while it was checked"));
                why_not = Some(format!("not run: the server's {exit}"));
            }
        }
    }
    if stop() {
        report.interrupted = true;
    }
    report.elapsed = start.elapsed();
    report
}

/// One step of a check: the ids it may report and how to run it.
struct Step {
    family: Family,
    ids: &'static [&'static str],
    /// It watches the process, not answers, so a server whose answers
    /// cannot be read is still judged.
    needs_no_answer: bool,
    run: fn(&Subject, &Transcript, &[Finding], &mut Vec<Finding>),
}

const fn step(
    family: Family,
    ids: &'static [&'static str],
    run: fn(&Subject, &Transcript, &[Finding], &mut Vec<Finding>),
) -> Step {
    Step {
        family,
        ids,
        needs_no_answer: false,
        run,
    }
}

/// The steps, in order; every id of the catalogue is in one.
const STEPS: [Step; 10] = [
    step(
        Family::Framing,
        &[
            "bad-status-line",
            "bytes-after-body",
            "body-shorter-than-length",
            "no-length-no-close",
            "bad-chunked",
            "bad-date",
            "head-with-body",
        ],
        |s, first, _, o| framing::check(s, first, o),
    ),
    step(
        Family::Connections,
        &[
            "keepalive-ignored",
            "pipelining-broken",
            "http10-not-closed",
            "http10-keepalive-unconfirmed",
            "reset-on-close",
            "expect-continue-ignored",
        ],
        |s, first, _, o| connections::check(s, first, o),
    ),
    step(
        Family::Requests,
        &["partial-request-dropped"],
        |s, _, _, o| robustness::partial_request(s, o),
    ),
    step(
        Family::Robustness,
        &[
            "crash-on-bad-input",
            "bad-input-hangs",
            "bad-input-accepted",
        ],
        |s, _, _, o| robustness::bad_input(s, o),
    ),
    step(Family::Concurrency, &["one-at-a-time"], |s, _, _, o| {
        concurrency::one_at_a_time(s, o)
    }),
    step(
        Family::Concurrency,
        &["crossed-responses"],
        |s, _, prior, o| concurrency::crossed(s, prior, o),
    ),
    step(
        Family::Concurrency,
        &["listen-overflow", "resets"],
        |s, _, _, o| concurrency::burst(s, o),
    ),
    Step {
        needs_no_answer: true,
        ..step(Family::Concurrency, &["busy-when-idle"], |s, _, _, o| {
            process::busy_when_idle(s, o)
        })
    },
    step(Family::Concurrency, &["fd-leak"], |s, _, _, o| {
        process::fd_leak(s, o)
    }),
    step(
        Family::Safety,
        &["path-traversal", "slowloris-blocks"],
        |s, _, _, o| {
            safety::traversal(s, o);
            safety::slowloris(s, o)
        },
    ),
];

/// A skip for each wanted id of `ids`.
fn skip_all(s: &Subject, ids: &[&'static str], why: &str, out: &mut Vec<Finding>) {
    for id in ids.iter().filter(|id| s.wants(id)) {
        out.push(Finding::skip(id, why));
    }
}

/// The framing defect that left the first GET without a whole answer: the
/// checks after framing then cannot read answers, and would only repeat it.
fn unreadable(first: &Transcript, found: &[Finding]) -> Option<&'static str> {
    if !first.answers.is_empty() {
        return None;
    }
    found
        .iter()
        .find(|f| f.defect.family == Family::Framing && f.verdict == super::outcome::Verdict::Fail)
        .map(|f| f.defect.id)
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
    if !first.raw.starts_with(b"HTTP") {
        return Some(format!(
            "not an HTTP server: a GET got {}",
            super::probe::shown(&first.raw[..first.raw.len().min(60)])
        ));
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
