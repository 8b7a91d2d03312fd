//! The connection checks: keep-alive kept or refused as the head says,
//! pipelined requests answered in order, HTTP/1.0 closes and keep-alives
//! confirmed, no reset on close, and `Expect: 100-continue` answered.

use std::io::Write;
use std::time::Duration;

use super::outcome::Finding;
use super::probe::{read, shown, End, Transcript, Want};
use super::subject::Subject;

/// The connection checks wanted; `first` is the framing checks' GET,
/// watched after its answer.
pub fn check(s: &Subject, first: &Transcript, out: &mut Vec<Finding>) {
    if s.wants("keepalive-ignored") {
        out.push(keepalive(s, first));
    }
    if s.wants("pipelining-broken") {
        out.push(if first.extra.is_empty() {
            pipelining(s)
        } else {
            // The extra bytes would open the second answer: its failure
            // would be bytes-after-body's, counted twice.
            Finding::skip(
                "pipelining-broken",
                "not judged: bytes after the first answer's body (bytes-after-body) leave the next answer's start unknown",
            )
        });
    }
    if s.wants("http10-not-closed") {
        out.push(http10_close(s));
    }
    if s.wants("http10-keepalive-unconfirmed") {
        out.push(http10_keepalive(s));
    }
    if s.wants("reset-on-close") {
        out.push(reset_on_close(s));
    }
    if s.wants("expect-continue-ignored") {
        out.push(expect_continue(s));
    }
}

fn keepalive(s: &Subject, first: &Transcript) -> Finding {
    const ID: &str = "keepalive-ignored";
    let Some(a) = first.answers.first() else {
        return Finding::skip(ID, "the first GET got no whole answer");
    };
    let watched = s.pace.watch.as_millis();
    if !a.status_line.starts_with(b"HTTP/1.1") {
        return Finding::pass(ID, "an HTTP/1.0 answer, which implies the close");
    }
    if !a.keep_alive {
        return Finding::pass(ID, "the answer said Connection: close");
    }
    match (&first.end, first.ended_after) {
        (End::Closed | End::Reset, Some(after)) => Finding::found(
            ID,
            format!(
                "GET {} HTTP/1.1: an HTTP/1.1 answer without Connection: close, and the connection {} {} ms after the request",
                s.probe.path,
                if first.end == End::Reset { "was reset" } else { "closed" },
                after.as_millis()
            ),
        ),
        _ => Finding::pass(ID, format!("still open {watched} ms after the answer")),
    }
}

/// Two GETs in one write, the path then a missing one: two answers, in
/// that order, each as it comes alone.
fn pipelining(s: &Subject) -> Finding {
    const ID: &str = "pipelining-broken";
    let p = &s.probe;
    let mut bytes = p.get(&p.path);
    bytes.extend(p.get(&p.missing));
    let t = p.exchange(&bytes, Want::answers(2).within(s.pace.answer));
    let sent = format!("GET {} and GET {} in one write", p.path, p.missing);
    let (want_first, want_second) = (&s.refs.path, &s.refs.missing);
    match t.answers.as_slice() {
        [a, b] => {
            let in_order = s.refs.matches(a, want_first) && s.refs.matches(b, want_second);
            Finding::judge(
                ID,
                !in_order,
                format!(
                    "{sent}: answers {} then {} (alone: {} then {})",
                    a.status, b.status, want_first.status, want_second.status
                ),
            )
        }
        [a] if !a.keep_alive => Finding::pass(
            ID,
            format!(
                "{sent}: one answer ({}), which said it would close",
                a.status
            ),
        ),
        got => Finding::found(
            ID,
            format!(
                "{sent}: {} answer{} ({}; {})",
                got.len(),
                if got.len() == 1 { "" } else { "s" },
                t.shown(),
                t.ending()
            ),
        ),
    }
}

/// An HTTP/1.0 GET without keep-alive: the server closes after it.
fn http10_close(s: &Subject) -> Finding {
    const ID: &str = "http10-not-closed";
    let p = &s.probe;
    let t = p.exchange(
        &p.request("GET", &p.path, "HTTP/1.0", ""),
        Want::answers(1).within(s.pace.answer).linger(s.pace.watch),
    );
    let sent = format!("GET {} HTTP/1.0", p.path);
    match (&t.end, t.answers.first()) {
        (End::Closed | End::Reset, Some(_)) => {
            Finding::pass(ID, format!("{sent}: closed after the answer"))
        }
        // No answer to judge the close by; ab speaks HTTP/1.0, so say so.
        (End::Closed | End::Reset, None) => Finding::skip(
            ID,
            format!(
                "{sent}: the connection closed without a whole answer ({}), so ab, which sends HTTP/1.0, gets none either",
                t.shown()
            ),
        ),
        (End::Open, Some(a)) => Finding::found(
            ID,
            format!(
                "{sent}: answered {}, and the connection still open {} ms later",
                a.status,
                s.pace.watch.as_millis()
            ),
        ),
        (End::Open, None) => Finding::found(
            ID,
            format!(
                "{sent}: got {} and the connection stayed open, so the answer never ended",
                t.shown()
            ),
        ),
        (End::NotMade(why), _) => Finding::skip(ID, why.clone()),
    }
}

/// An HTTP/1.0 GET asking for keep-alive: confirmed with the token, or
/// closed.
fn http10_keepalive(s: &Subject) -> Finding {
    const ID: &str = "http10-keepalive-unconfirmed";
    let p = &s.probe;
    let sent = format!("GET {} HTTP/1.0 with Connection: keep-alive", p.path);
    let bytes = p.request("GET", &p.path, "HTTP/1.0", "Connection: keep-alive\r\n");
    let mut conn = match p.open(&bytes) {
        Ok(c) => c,
        Err(why) => return Finding::skip(ID, why),
    };
    let t = read(&mut conn, Want::answers(1).within(s.pace.answer));
    let Some(a) = t.answers.first() else {
        return match t.end {
            End::Open => Finding::found(
                ID,
                format!("{sent}: got {}, never ended, connection open", t.shown()),
            ),
            _ => Finding::pass(ID, format!("{sent}: closed ({})", t.shown())),
        };
    };
    if a.has_token("connection", "keep-alive") {
        return Finding::pass(ID, format!("{sent}: answer confirms keep-alive"));
    }
    if t.end != End::Open {
        return Finding::pass(ID, format!("{sent}: no keep-alive token, and closed"));
    }
    let after = read(&mut conn, Want::answers(0).linger(s.pace.watch));
    Finding::judge(
        ID,
        after.end == End::Open,
        format!(
            "{sent}: answered {} without a keep-alive token; connection {}",
            shown(&a.status_line),
            match after.end {
                End::Open => format!("still open {} ms later", s.pace.watch.as_millis()),
                _ => "closed".into(),
            }
        ),
    )
}

/// The body sent with a POST the server may answer without reading:
/// more than one read takes, so some is unread if it closes at once.
const UNREAD_BODY: usize = 48 * 1024;

/// A POST with a body, sent whole with its head, as a client does before
/// it knows the answer: a server that answers without reading the body
/// (405 for a file, say) and closes must not reset the connection.
fn reset_on_close(s: &Subject) -> Finding {
    const ID: &str = "reset-on-close";
    let p = &s.probe;
    let mut bytes = p.request(
        "POST",
        &p.path,
        "HTTP/1.1",
        &format!("Content-Type: application/octet-stream\r\nContent-Length: {UNREAD_BODY}\r\n"),
    );
    bytes.resize(bytes.len() + UNREAD_BODY, b'x');
    let sent = format!(
        "POST {} with a {} KiB body in the same write",
        p.path,
        UNREAD_BODY / 1024
    );
    let mut conn = match p.connect() {
        Ok(c) => c,
        Err(e) => return Finding::skip(ID, format!("connect failed: {e}")),
    };
    let _ = conn.set_write_timeout(Some(Duration::from_secs(1)));
    let written = conn.write_all(&bytes);
    if let Err(e) = &written {
        if e.kind() == std::io::ErrorKind::ConnectionReset {
            return Finding::found(ID, format!("{sent}: reset while sending"));
        }
    }
    let t = read(
        &mut conn,
        Want::answers(1).within(s.pace.answer).linger(s.pace.watch),
    );
    match (&t.end, t.answers.first()) {
        (End::Reset, a) => Finding::found(
            ID,
            format!(
                "{sent}: {}, then a reset instead of a close",
                match a {
                    Some(a) => format!("answered {}", a.status),
                    None => format!("got {}", t.shown()),
                }
            ),
        ),
        (End::Closed, Some(a)) => Finding::pass(
            ID,
            format!("{sent}: answered {}, then a clean close", a.status),
        ),
        (End::NotMade(why), _) => Finding::skip(ID, why.clone()),
        (End::Open, Some(a)) => Finding::pass(
            ID,
            format!("{sent}: answered {}, connection kept open", a.status),
        ),
        _ => Finding::pass(ID, format!("{sent}: {} ({})", t.shown(), t.ending())),
    }
}

/// A POST announcing a body with `Expect: 100-continue`, body withheld:
/// some answer (100 or final) should come.
fn expect_continue(s: &Subject) -> Finding {
    const ID: &str = "expect-continue-ignored";
    let p = &s.probe;
    let bytes = p.request(
        "POST",
        &p.path,
        "HTTP/1.1",
        "Content-Length: 16\r\nExpect: 100-continue\r\n",
    );
    let t = p.exchange(&bytes, Want::answers(1).within(s.pace.expect));
    let sent = format!(
        "POST {} with Expect: 100-continue, body withheld {} ms",
        p.path,
        s.pace.expect.as_millis()
    );
    Finding::judge(
        ID,
        t.first_byte.is_none() && !matches!(t.end, End::NotMade(_)),
        match t.first_byte {
            Some(at) => format!(
                "{sent}: {} after {} ms",
                shown(
                    t.raw
                        .split(|&b| b == b'\n')
                        .next()
                        .unwrap_or_default()
                        .trim_ascii_end()
                ),
                at.as_millis()
            ),
            None => format!("{sent}: nothing came ({})", t.ending()),
        },
    )
}
