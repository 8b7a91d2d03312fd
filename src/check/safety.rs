//! The safety checks: traversal forms that must not reach a file outside
//! what is served (a canary planted above the docroot, or /etc/passwd),
//! and one slow head that must not keep other clients waiting.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::outcome::Finding;
use super::probe::{shown, Want};
use super::subject::{Canary, Subject};

/// The traversal forms for reaching `file` through `up` levels of `..`:
/// plain, percent-encoded (once and twice), backslashes, an absolute
/// path with encoded slashes, and in the query.
fn forms(up: usize, file: &str, absolute: &str, path: &str) -> Vec<String> {
    let r = |seg: &str| seg.repeat(up);
    let enc_abs = absolute.replace('/', "%2f");
    vec![
        format!("/{}{file}", r("../")),
        format!("/{}{file}", r("..%2f")),
        format!("/{}{file}", r("%2e%2e/")),
        format!("/{}{file}", r("%2e%2e%2f")),
        format!("/{}{file}", r(".%2e/")),
        format!("/{}{file}", r("..%5c")),
        format!("/{}{file}", r("%252e%252e%252f")),
        format!("/./{}{file}", r("../")),
        format!("/{enc_abs}"),
        format!("/?file={}{file}", r("../")),
        format!("/?path={}{file}", r("..%2f")),
        format!("{path}?file={}{file}", r("../")),
    ]
}

/// Whether `body` is the file the form aimed at.
fn leaked(body: &[u8], canary: Option<&Canary>) -> bool {
    let text = String::from_utf8_lossy(body);
    match canary {
        Some(c) => text.contains(&c.token),
        None => text
            .lines()
            .any(|l| l.starts_with("root:") && l.contains(":0:0:")),
    }
}

/// `path-traversal`: every form, towards the canary when there is one
/// and towards /etc/passwd always.
pub fn traversal(s: &Subject, out: &mut Vec<Finding>) {
    const ID: &str = "path-traversal";
    if !s.wants(ID) {
        return;
    }
    let p = &s.probe;
    let base = p.path.split('?').next().unwrap_or("/");
    let mut tries: Vec<(String, Option<&Canary>)> = Vec::new();
    if let Some(c) = &s.canary {
        tries.extend(
            forms(1, &c.name, &c.path, base)
                .into_iter()
                .map(|f| (f, Some(c))),
        );
    }
    tries.extend(
        forms(8, "etc/passwd", "/etc/passwd", base)
            .into_iter()
            .map(|f| (f, None)),
    );
    for (n, (target, canary)) in tries.iter().enumerate() {
        if (s.stop)() || s.out_of_time() {
            return out.push(Finding::skip(
                ID,
                format!(
                    "not finished: {n} of {} forms sent when time ran out",
                    tries.len()
                ),
            ));
        }
        let t = p.exchange(&p.get_close(target), Want::answers(1).within(s.pace.answer));
        if let Some(a) = t.answers.first().filter(|a| (200..300).contains(&a.status)) {
            if leaked(&a.body, *canary) {
                let what = match canary {
                    Some(c) => format!(
                        "the canary file planted above the served directory ({})",
                        c.path
                    ),
                    None => "/etc/passwd".to_string(),
                };
                return out.push(Finding::found(
                    ID,
                    format!(
                        "GET {target} answered {} with {what}: {}",
                        a.status,
                        shown(&a.body)
                    ),
                ));
            }
        }
    }
    let aimed = if s.canary.is_some() {
        "a canary planted above the served directory and /etc/passwd"
    } else {
        "/etc/passwd (no canary: this target serves no directory loadlab chose)"
    };
    out.push(Finding::pass(
        ID,
        format!(
            "{} traversal forms, aimed at {aimed}: none returned it",
            tries.len()
        ),
    ));
}

/// How long other clients may go unanswered while one head trickles in.
const SLOWLORIS_LIMIT: Duration = Duration::from_secs(5);
/// How often client B asks meanwhile.
const SLOWLORIS_ASK: Duration = Duration::from_millis(500);

/// `slowloris-blocks`: client A sends its head a byte a second while
/// client B asks every half second; B must be answered within 5 s.
pub fn slowloris(s: &Subject, out: &mut Vec<Finding>) {
    const ID: &str = "slowloris-blocks";
    if !s.wants(ID) {
        return;
    }
    let p = &s.probe;
    let head = p.get(&p.path);
    let done = AtomicBool::new(false);
    let trickled = AtomicUsize::new(0);
    let start = Instant::now();
    let verdict = std::thread::scope(|scope| {
        scope.spawn(|| {
            let Ok(mut a) = p.connect() else { return };
            for b in head.iter() {
                if done.load(Ordering::SeqCst) || a.write_all(&[*b]).is_err() {
                    return;
                }
                trickled.fetch_add(1, Ordering::SeqCst);
                let next = Instant::now() + Duration::from_secs(1);
                while Instant::now() < next && !done.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        });
        // B starts once A has begun.
        std::thread::sleep(Duration::from_millis(1100));
        let verdict = loop {
            let asked = Instant::now();
            let t = p.exchange(
                &p.get_close(&p.path),
                Want::answers(1).within(Duration::from_secs(1)),
            );
            if let Some(b) = t.answers.first() {
                break Finding::pass(
                    ID,
                    format!(
                        "while client A sent its head a byte a second ({} bytes so far), client B was answered {} after {} ms",
                        trickled.load(Ordering::SeqCst),
                        b.status,
                        t.first_byte.unwrap_or_default().as_millis()
                    ),
                );
            }
            if (s.stop)() {
                break Finding::skip(ID, "interrupted");
            }
            if start.elapsed() >= SLOWLORIS_LIMIT + Duration::from_secs(1) {
                break Finding::found(
                    ID,
                    format!(
                        "while client A sent its head a byte a second ({} bytes so far), client B (GET {}, every {} ms) got no answer for {} s",
                        trickled.load(Ordering::SeqCst),
                        p.path,
                        SLOWLORIS_ASK.as_millis(),
                        (start.elapsed().as_secs_f64() - 1.1).round()
                    ),
                );
            }
            std::thread::sleep(SLOWLORIS_ASK.saturating_sub(asked.elapsed()));
        };
        done.store(true, Ordering::SeqCst);
        verdict
    });
    out.push(verdict);
}
