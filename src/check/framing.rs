//! The framing checks: does each response end where its head says, with a
//! well-formed status line and Date, and nothing after it. All but
//! `head-with-body` are read from one GET watched after its answer.

use crate::http::client::{is_imf_fixdate, ResponseError};

use super::catalogue::{Family, DEFECTS};
use super::outcome::Finding;
use super::probe::{shown, status_line_ok, Answer, BodyFraming, End, Transcript, Want};
use super::subject::Subject;

/// The framing checks wanted, from the first GET (`first`, watched for
/// `pace.watch` after its answer) and a HEAD of the same path.
pub fn check(s: &Subject, first: &Transcript, out: &mut Vec<Finding>) {
    let p = &s.probe;
    let sent = format!("GET {} HTTP/1.1", p.path);
    let Some(a) = first.answers.first() else {
        unanswered(s, first, &sent, out);
        return;
    };
    if s.wants("bad-status-line") {
        out.push(Finding::judge(
            "bad-status-line",
            !status_line_ok(&a.status_line),
            format!("{sent}: status line {}", shown(&a.status_line)),
        ));
    }
    if s.wants("bytes-after-body") {
        let n = first.extra.len();
        out.push(Finding::judge(
            "bytes-after-body",
            n > 0,
            if n > 0 {
                format!(
                    "{sent}: {n} byte{} after a {}-byte body ({}): {}",
                    if n == 1 { "" } else { "s" },
                    a.body.len(),
                    framing_words(a),
                    shown(&first.extra)
                )
            } else {
                format!(
                    "{sent}: {} {}-byte body ({}), nothing after it in {} ms",
                    a.status,
                    a.body.len(),
                    framing_words(a),
                    s.pace.watch.as_millis()
                )
            },
        ));
    }
    for id in [
        "body-shorter-than-length",
        "no-length-no-close",
        "bad-chunked",
    ] {
        if s.wants(id) {
            out.push(Finding::pass(
                id,
                format!("{sent}: answered whole ({})", framing_words(a)),
            ));
        }
    }
    if s.wants("bad-date") {
        out.push(date(a, &sent));
    }
    if s.wants("head-with-body") {
        out.push(head_with_body(s));
    }
}

/// The first GET got no complete answer: say why, as the framing check
/// it breaks.
fn unanswered(s: &Subject, t: &Transcript, sent: &str, out: &mut Vec<Finding>) {
    let head = super::probe::head_of(&t.raw);
    let got = format!("{sent}: got {} ({})", t.shown(), t.ending());
    let cause = match (t.error, head.as_ref().map(|a| a.framing)) {
        (Some(ResponseError::BadHead | ResponseError::HeadTooLarge), _) => "bad-status-line",
        (Some(ResponseError::BadChunk), _) | (_, Some(BodyFraming::Chunked)) => "bad-chunked",
        (Some(ResponseError::Incomplete), Some(BodyFraming::Length)) => "body-shorter-than-length",
        (None, Some(BodyFraming::UntilClose)) if t.end == End::Open => "no-length-no-close",
        (None, Some(BodyFraming::Length)) if t.end == End::Open => "body-shorter-than-length",
        _ => "",
    };
    // Every framing check judged from this GET (HEAD's is its own).
    let from_get = DEFECTS
        .iter()
        .filter(|d| d.family == Family::Framing && d.id != "head-with-body");
    for id in from_get.map(|d| d.id) {
        if !s.wants(id) {
            continue;
        }
        out.push(if id == cause {
            Finding::found(id, got.clone())
        } else if id == "bad-status-line" && !cause.is_empty() {
            match &head {
                Some(h) => Finding::judge(
                    id,
                    !status_line_ok(&h.status_line),
                    format!("{sent}: status line {}", shown(&h.status_line)),
                ),
                None => Finding::skip(id, "no status line came"),
            }
        } else {
            Finding::skip(id, format!("no whole answer to judge: {got}"))
        });
    }
    if s.wants("head-with-body") {
        out.push(head_with_body(s));
    }
}

fn framing_words(a: &Answer) -> String {
    match a.framing {
        BodyFraming::Length => format!(
            "Content-Length: {}",
            String::from_utf8_lossy(a.field("content-length").unwrap_or_default())
        ),
        BodyFraming::Chunked => "chunked".into(),
        BodyFraming::UntilClose => "ended by the close".into(),
        BodyFraming::None => "no body".into(),
    }
}

fn date(a: &Answer, sent: &str) -> Finding {
    match a.field("date") {
        None => Finding::found("bad-date", format!("{sent}: the answer has no Date field")),
        Some(v) if !is_imf_fixdate(v) => Finding::found(
            "bad-date",
            format!("{sent}: Date: {} is not an IMF-fixdate", shown(v)),
        ),
        Some(v) => Finding::pass("bad-date", format!("Date: {}", shown(v))),
    }
}

/// A HEAD of the path, watched after its head for bytes that should not
/// come.
fn head_with_body(s: &Subject) -> Finding {
    let p = &s.probe;
    let t = p.exchange(
        &p.request("HEAD", &p.path, "HTTP/1.1", ""),
        Want::answers(1).head().linger(s.pace.short),
    );
    let sent = format!("HEAD {} HTTP/1.1", p.path);
    match t.answers.first() {
        Some(_) if !t.extra.is_empty() => Finding::found(
            "head-with-body",
            format!(
                "{sent}: {} bytes after the head: {}",
                t.extra.len(),
                shown(&t.extra)
            ),
        ),
        Some(a) => Finding::pass(
            "head-with-body",
            format!(
                "{sent}: {} head only, nothing after it in {} ms",
                a.status,
                s.pace.short.as_millis()
            ),
        ),
        None => Finding::skip(
            "head-with-body",
            format!("{sent}: no answer: {} ({})", t.shown(), t.ending()),
        ),
    }
}
