//! The request and robustness checks: a head that arrives in pieces, and
//! bad input (malformed lines, bytes that are not UTF-8, an over-long
//! line, a client that leaves mid-request), each on its own connection,
//! after which the server must still answer.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use super::outcome::Finding;
use super::probe::{read, End, Transcript, Want};
use super::subject::Subject;

/// How long a bad input's own connection, and then a good request, may
/// take to be answered or closed.
const BAD_INPUT_LIMIT: Duration = Duration::from_secs(5);
/// The gap between the pieces of a split head.
const PIECE_GAP: Duration = Duration::from_millis(50);

/// `partial-request-dropped`: the head in four writes, split inside the
/// request line, between lines and inside a field.
pub fn partial_request(s: &Subject, out: &mut Vec<Finding>) {
    const ID: &str = "partial-request-dropped";
    if !s.wants(ID) {
        return;
    }
    let p = &s.probe;
    let whole = p.get(&p.path);
    let line_end = whole.iter().position(|&b| b == b'\n').unwrap_or(2) + 1;
    let cuts = [2, line_end, line_end + 2, whole.len()];
    let mut pieces: Vec<&[u8]> = Vec::new();
    let mut from = 0;
    for c in cuts {
        pieces.push(&whole[from..c]);
        from = c;
    }
    let t = p.exchange_pieces(&pieces, PIECE_GAP, Want::answers(1).within(s.pace.answer));
    let sent = format!(
        "GET {} HTTP/1.1 in 4 writes {} ms apart (split after 'GE', after the request line, inside 'Host')",
        p.path,
        PIECE_GAP.as_millis()
    );
    out.push(match t.answers.first() {
        Some(a) if s.refs.matches(a, &s.refs.path) => Finding::pass(
            ID,
            format!("{sent}: answered {} as when sent whole", a.status),
        ),
        Some(a) => Finding::found(
            ID,
            format!(
                "{sent}: answered {} with {} bytes (sent whole: {} with {} bytes)",
                a.status,
                a.body.len(),
                s.refs.path.status,
                s.refs.path.body.len()
            ),
        ),
        None => Finding::found(
            ID,
            format!("{sent}: no answer: {} ({})", t.shown(), t.ending()),
        ),
    });
}

/// One bad input: what it is, and its bytes.
struct BadInput {
    what: &'static str,
    bytes: Vec<u8>,
    /// A malformed request, which must not be answered 2xx.
    malformed: bool,
}

fn bad_inputs(s: &Subject) -> Vec<BadInput> {
    let p = &s.probe;
    let path = &p.path;
    let host = &p.host;
    vec![
        BadInput {
            what: "a header line without a colon",
            bytes: format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nthis line has no colon\r\n\r\n")
                .into_bytes(),
            malformed: true,
        },
        BadInput {
            what: "a request line of four parts",
            bytes: format!("GET {path} HTTP/1.1 extra\r\nHost: {host}\r\n\r\n").into_bytes(),
            malformed: true,
        },
        BadInput {
            what: "a field value that is not UTF-8",
            bytes: [
                format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nX-Bytes: ").as_bytes(),
                b"\xff\xfe\xc3\x28",
                b"\r\nConnection: close\r\n\r\n",
            ]
            .concat(),
            malformed: false,
        },
        BadInput {
            what: "a 64 KiB request line",
            bytes: format!(
                "GET /{} HTTP/1.1\r\nHost: {host}\r\n\r\n",
                "a".repeat(64 * 1024)
            )
            .into_bytes(),
            malformed: false,
        },
    ]
}

/// What one bad input's connection did.
struct Outcome {
    what: &'static str,
    malformed: bool,
    transcript: Transcript,
}

/// The robustness checks: each bad input on its own connection, one after
/// another, each watched up to [`BAD_INPUT_LIMIT`]; a client that closes
/// mid-request; then a good request.
pub fn bad_input(s: &Subject, out: &mut Vec<Finding>) {
    let ids = [
        "crash-on-bad-input",
        "bad-input-hangs",
        "bad-input-accepted",
    ];
    if !ids.iter().any(|id| s.wants(id)) {
        return;
    }
    let p = &s.probe;
    // One at a time: together they would test concurrency, not input.
    let outcomes: Vec<Outcome> = bad_inputs(s)
        .into_iter()
        .map(|input| Outcome {
            what: input.what,
            malformed: input.malformed,
            transcript: send_bad(s, &input.bytes),
        })
        .collect();
    // A client that goes away mid-request.
    if let Ok(mut c) = p.connect() {
        let _ = c.write_all(format!("GET {} HT", p.path).as_bytes());
    }
    let sent: Vec<&str> = outcomes.iter().map(|o| o.what).collect();
    let sent = format!(
        "{}, and a request cut mid-line then closed",
        sent.join(", ")
    );
    if s.wants("bad-input-hangs") {
        let hung: Vec<&Outcome> = outcomes
            .iter()
            .filter(|o| o.transcript.end == End::Open && o.transcript.answers.is_empty())
            .collect();
        out.push(match hung.first() {
            Some(o) => Finding::found(
                "bad-input-hangs",
                format!(
                    "{}: no answer and no close in {} s (got {}){}",
                    o.what,
                    BAD_INPUT_LIMIT.as_secs(),
                    o.transcript.shown(),
                    if hung.len() > 1 {
                        format!("; {} of the bad inputs hung", hung.len())
                    } else {
                        String::new()
                    }
                ),
            ),
            None => Finding::pass(
                "bad-input-hangs",
                format!("{sent}: each answered or closed"),
            ),
        });
    }
    if s.wants("bad-input-accepted") {
        let accepted = outcomes.iter().find_map(|o| {
            let a = o.transcript.answers.first()?;
            (o.malformed && (200..300).contains(&a.status)).then_some((o.what, a.status))
        });
        out.push(match accepted {
            Some((what, status)) => {
                Finding::found("bad-input-accepted", format!("{what}: answered {status}"))
            }
            None => Finding::pass("bad-input-accepted", "each malformed request refused"),
        });
    }
    if s.wants("crash-on-bad-input") {
        out.push(still_serving(s, &sent));
    }
}

fn send_bad(s: &Subject, bytes: &[u8]) -> Transcript {
    let mut c: TcpStream = match s.probe.connect() {
        Ok(c) => c,
        Err(e) => return Transcript::failed(format!("connect failed: {e}")),
    };
    let _ = c.set_write_timeout(Some(Duration::from_secs(2)));
    // A server may answer and close before it read all of a long input.
    let _ = c.write_all(bytes);
    read(&mut c, Want::answers(1).within(BAD_INPUT_LIMIT))
}

/// After the bad inputs, a good request is answered and the process lives.
fn still_serving(s: &Subject, sent: &str) -> Finding {
    const ID: &str = "crash-on-bad-input";
    let p = &s.probe;
    if let Some(exit) = s.exited() {
        return Finding::found(ID, format!("after {sent}: the server {exit}"));
    }
    let t = p.exchange(
        &p.get_close(&p.path),
        Want::answers(1).within(BAD_INPUT_LIMIT),
    );
    // A process dying of its input may take a moment to be gone.
    let until = std::time::Instant::now() + Duration::from_secs(1);
    while t.answers.is_empty() && std::time::Instant::now() < until {
        if let Some(exit) = s.exited() {
            return Finding::found(ID, format!("after {sent}: the server {exit}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    match t.answers.first() {
        Some(a) => Finding::pass(
            ID,
            format!("after {sent}: a good GET answered {}", a.status),
        ),
        None => Finding::found(
            ID,
            format!(
                "after {sent}: a good GET got no answer in {} s ({}; {})",
                BAD_INPUT_LIMIT.as_secs(),
                t.shown(),
                t.ending()
            ),
        ),
    }
}
