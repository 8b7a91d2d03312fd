//! The concurrency checks on the wire: a second client served while a
//! first holds an idle connection, concurrent interleaved requests each
//! getting its own answer, and a burst of connects (listen queue, resets).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::sys::tcp;

use super::outcome::{Finding, Verdict};
use super::probe::{read, End, Transcript, Want};
use super::subject::Subject;

/// Connections in one round of `crossed-responses`, half for the path and
/// half for the missing one.
const CROSS_CONNS: usize = 16;
/// Rounds of `crossed-responses` (it stops at the first crossing).
const CROSS_ROUNDS: usize = 3;
/// Connections in the burst.
const BURST: usize = 100;
/// How long a burst connection may take to connect and be answered: past
/// the SYN retries at 1 s and 3 s.
const BURST_LIMIT: Duration = Duration::from_secs(8);

/// `one-at-a-time`: client A keeps an idle keep-alive connection while
/// client B asks.
pub fn one_at_a_time(s: &Subject, out: &mut Vec<Finding>) {
    const ID: &str = "one-at-a-time";
    if !s.wants(ID) {
        return;
    }
    let p = &s.probe;
    let mut a = match p.open(&p.get(&p.path)) {
        Ok(c) => c,
        Err(why) => return out.push(Finding::skip(ID, why)),
    };
    let first = read(&mut a, Want::answers(1).within(s.pace.answer));
    let held = matches!(first.answers.first(), Some(x) if x.keep_alive) && first.end == End::Open;
    if !held {
        return out.push(Finding::pass(
            ID,
            "client A's connection was not kept alive, so it cannot hold the server",
        ));
    }
    let t = p.exchange(
        &p.get_close(&p.path),
        Want::answers(1).within(s.pace.answer),
    );
    out.push(match t.answers.first() {
        Some(b) => Finding::pass(
            ID,
            format!(
                "client B answered {} in {} ms while A held an idle keep-alive connection",
                b.status,
                t.first_byte.unwrap_or_default().as_millis()
            ),
        ),
        None => Finding::found(
            ID,
            format!(
                "client B (GET {}) got no answer in {} ms while client A held an idle keep-alive connection ({})",
                p.path,
                s.pace.answer.as_millis(),
                t.ending()
            ),
        ),
    });
    drop(a);
}

/// `crossed-responses`: 16 connections, half asking the path and half the
/// missing one, each head sent in three pieces interleaved across them;
/// each answer must be what that request gets alone.
pub fn crossed(s: &Subject, prior: &[Finding], out: &mut Vec<Finding>) {
    const ID: &str = "crossed-responses";
    if !s.wants(ID) {
        return;
    }
    // Its heads come in pieces: a server that drops split heads would fail
    // here for that defect, not for crossing.
    if prior
        .iter()
        .any(|f| f.defect.id == "partial-request-dropped" && f.verdict == Verdict::Fail)
    {
        return out.push(Finding::skip(
            ID,
            "not judged: this server does not answer heads sent in pieces (partial-request-dropped)",
        ));
    }
    let p = &s.probe;
    // Connections that got no answer prove nothing either way.
    let mut unanswered = 0;
    for round in 1..=CROSS_ROUNDS {
        let asks: Vec<(&str, Vec<u8>)> = (0..CROSS_CONNS)
            .map(|i| {
                let path = if i % 2 == 0 { &p.path } else { &p.missing };
                (path.as_str(), p.get_close(path))
            })
            .collect();
        let mut conns = Vec::new();
        for _ in 0..CROSS_CONNS {
            match p.connect() {
                Ok(c) => conns.push(c),
                Err(e) => return out.push(Finding::skip(ID, format!("connect failed: {e}"))),
            }
        }
        for piece in 0..3 {
            for (c, (_, bytes)) in conns.iter_mut().zip(&asks) {
                let third = bytes.len() / 3;
                let range = match piece {
                    0 => 0..third,
                    1 => third..2 * third,
                    _ => 2 * third..bytes.len(),
                };
                let _ = c.write_all(&bytes[range]);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        // Read at once, each connection closed once read: a server that
        // serves one connection at a time, in an order of its choosing,
        // and lingers after each close, then moves on at once.
        let answers: Vec<Transcript> = std::thread::scope(|scope| {
            let readers: Vec<_> = conns
                .into_iter()
                .map(|mut c| {
                    scope.spawn(move || read(&mut c, Want::answers(1).within(s.pace.answer)))
                })
                .collect();
            readers
                .into_iter()
                .map(|r| {
                    r.join()
                        .unwrap_or_else(|_| Transcript::failed("reader panicked".into()))
                })
                .collect()
        });
        for (i, (t, (path, _))) in answers.iter().zip(&asks).enumerate() {
            let alone = if i % 2 == 0 {
                &s.refs.path
            } else {
                &s.refs.missing
            };
            let Some(a) = t.answers.first() else {
                unanswered += 1;
                continue;
            };
            if !s.refs.matches(a, alone) {
                let got = format!("{} with {} bytes", a.status, a.body.len());
                return out.push(Finding::found(
                    ID,
                    format!(
                        "round {round}, connection {} of {CROSS_CONNS} asked {path}: got {got}; alone it gets {} with {} bytes",
                        i + 1,
                        alone.status,
                        alone.body.len()
                    ),
                ));
            }
        }
    }
    if unanswered > 0 {
        return out.push(Finding::skip(
            ID,
            format!(
                "{unanswered} of {} interleaved requests got no answer in {} ms; the answered ones were as alone",
                CROSS_ROUNDS * CROSS_CONNS,
                s.pace.answer.as_millis()
            ),
        ));
    }
    out.push(Finding::pass(
        ID,
        format!(
            "{CROSS_ROUNDS} rounds of {CROSS_CONNS} interleaved requests ({} and {}), each answered as alone",
            p.path, p.missing
        ),
    ));
}

/// What one burst connection saw.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fate {
    /// Connected after `connect`, first byte `first` later.
    Answered {
        connect: Duration,
        first: Duration,
    },
    Refused,
    Reset,
    /// Neither answered nor refused within the limit.
    TimedOut {
        connect: Option<Duration>,
    },
}

/// `listen-overflow` and `resets`: 100 connections at once, each sending
/// a GET, with the kernel's counters read around them.
pub fn burst(s: &Subject, out: &mut Vec<Finding>) {
    if !s.wants("listen-overflow") && !s.wants("resets") {
        return;
    }
    let before = tcp::read();
    // A start flag, not a barrier: a thread that cannot be made must not
    // leave the others waiting for it.
    let go = AtomicBool::new(false);
    let fates: Vec<Fate> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..BURST)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, || {
                        while !go.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        one_of_burst(s)
                    })
                    .ok()
            })
            .collect();
        go.store(true, Ordering::SeqCst);
        runs.into_iter()
            .map(|r| r.join().unwrap_or(Fate::Reset))
            .collect()
    });
    let rose = tcp::delta(&before, &tcp::read());
    let count = |f: &dyn Fn(&Fate) -> bool| fates.iter().filter(|x| f(x)).count();
    let refused = count(&|f| *f == Fate::Refused);
    let reset = count(&|f| *f == Fate::Reset);
    let timed_out = count(&|f| matches!(f, Fate::TimedOut { .. }));
    let slow = Duration::from_millis(900);
    let slow_connect = count(&|f| match f {
        Fate::Answered { connect, .. } => *connect >= slow,
        Fate::TimedOut { connect } => connect.map_or(true, |c| c >= slow),
        _ => false,
    });
    let slow_any = count(&|f| match f {
        Fate::Answered { connect, first } => *connect + *first >= slow,
        _ => false,
    });
    let overflowed = rose.get("ListenOverflows").copied().unwrap_or(0)
        + rose.get("ListenDrops").copied().unwrap_or(0);
    let times = spread(&fates);
    if s.wants("listen-overflow") {
        let counters = match (rose.get("ListenOverflows"), rose.get("ListenDrops")) {
            (Some(o), Some(d)) => {
                format!("ListenOverflows +{o}, ListenDrops +{d} (whole network namespace)")
            }
            _ => "listen counters unreadable here".into(),
        };
        // The counters count every socket of the namespace: a rise counts
        // against this target only when its own connections were delayed.
        // A slow first byte is the server's pace, not its queue: only
        // connects count.
        let defective = slow_connect >= 5 || (overflowed > 0 && slow_connect > 0);
        out.push(Finding::judge(
            "listen-overflow",
            defective,
            format!(
                "{BURST} connects at once: {slow_connect} took >= 0.9 s to connect, {slow_any} >= 0.9 s to the first byte; {times}; {counters}"
            ),
        ));
    }
    if s.wants("resets") {
        out.push(Finding::judge(
            "resets",
            refused + reset > 0,
            format!(
                "{BURST} connects at once, each with a GET: {refused} refused, {reset} reset, {timed_out} unanswered in {} s",
                BURST_LIMIT.as_secs()
            ),
        ));
    }
}

fn one_of_burst(s: &Subject) -> Fate {
    let p = &s.probe;
    let start = Instant::now();
    let mut c = match std::net::TcpStream::connect_timeout(&p.addr, BURST_LIMIT) {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Fate::Refused,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Fate::Reset,
        Err(_) => return Fate::TimedOut { connect: None },
    };
    let connect = start.elapsed();
    if let Err(e) = c.write_all(&p.get_close(&p.path)) {
        return match e.kind() {
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe => Fate::Reset,
            _ => Fate::TimedOut {
                connect: Some(connect),
            },
        };
    }
    let t = read(
        &mut c,
        Want::answers(1).within(BURST_LIMIT.saturating_sub(connect)),
    );
    match (t.first_byte, &t.end) {
        (Some(first), _) if !t.answers.is_empty() => Fate::Answered { connect, first },
        (_, End::Reset) => Fate::Reset,
        _ => Fate::TimedOut {
            connect: Some(connect),
        },
    }
}

/// The burst's connect-to-first-byte times in words: median and slowest.
fn spread(fates: &[Fate]) -> String {
    let mut ms: Vec<u128> = fates
        .iter()
        .filter_map(|f| match f {
            Fate::Answered { connect, first } => Some((*connect + *first).as_millis()),
            _ => None,
        })
        .collect();
    ms.sort_unstable();
    match (ms.get(ms.len() / 2), ms.last()) {
        (Some(mid), Some(max)) => format!("answered in {mid} ms (median), {max} ms (slowest)"),
        _ => "none answered".into(),
    }
}
