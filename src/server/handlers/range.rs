//! Byte ranges of a GET: the `Range` header, single ranges only (RFC 9110
//! 14.1.2), and the 200, 206 or 416 answer built on it, shared by static
//! files and the file service.

use bytes::Bytes;

use super::response::{Body, Response};
use super::validators::Validators;
use crate::http::{Method, RequestHead};

/// Answers a GET or HEAD of the whole `body` (whose `headers` say
/// `Accept-Ranges: bytes`): 200, 206 for the single range a GET asks for,
/// or 416 for one that selects nothing; If-Range naming another version
/// voids the range. The caller checks preconditions (304, 412) first.
pub fn respond(head: &RequestHead, v: &Validators, headers: Bytes, body: Body) -> Response {
    let len = body.len();
    // Range is for GET only (RFC 9110 14.2); HEAD describes the whole.
    let wanted = if head.method == Method::Get && head.has_range() && v.if_range_holds(head) {
        parse(head.header_str("range"), len)
    } else {
        ByteRange::Whole
    };
    let whole = |status, body| Response {
        status,
        headers,
        body,
        close: false,
    };
    match wanted {
        ByteRange::Whole => whole(200, body),
        ByteRange::Part { start, end } => whole(206, part(body, start, end - start + 1))
            .header("Content-Range", &format!("bytes {start}-{end}/{len}")),
        ByteRange::Unsatisfiable => {
            Response::error(416).header("Content-Range", &format!("bytes */{len}"))
        }
    }
}

/// `len` bytes of `body` from `start`; the caller checked they lie within.
fn part(body: Body, start: u64, len: u64) -> Body {
    match body {
        Body::Empty => Body::Empty,
        Body::Bytes(b) => Body::Bytes(b.slice(start as usize..(start + len) as usize)),
        Body::File { file, offset, .. } => Body::File {
            file,
            offset: offset + start,
            len,
        },
        Body::Repeated { unit, offset, .. } => Body::Repeated {
            unit,
            offset: offset + start,
            len,
        },
    }
}

/// What a Range header asks of a representation of `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// No usable range: serve all of it (200). Covers no header, another
    /// unit, bad syntax and multiple ranges, which a server may ignore.
    Whole,
    /// Bytes `start..=end`, both within the file (206).
    Part { start: u64, end: u64 },
    /// A well-formed range that selects nothing (416).
    Unsatisfiable,
}

/// Interprets a Range header value for a representation of `len` bytes.
pub fn parse(header: Option<&str>, len: u64) -> ByteRange {
    let Some(spec) = header.and_then(|h| strip_prefix_ci(h.trim(), "bytes=")) else {
        return ByteRange::Whole;
    };
    let spec = spec.trim();
    if spec.contains(',') {
        return ByteRange::Whole;
    }
    let Some((first, last)) = spec.split_once('-') else {
        return ByteRange::Whole;
    };
    let (first, last) = (first.trim(), last.trim());
    match (digits(first), digits(last)) {
        // bytes=-N: the last N bytes.
        (None, Some(n)) if first.is_empty() => {
            if n == 0 || len == 0 {
                ByteRange::Unsatisfiable
            } else {
                ByteRange::Part {
                    start: len.saturating_sub(n),
                    end: len - 1,
                }
            }
        }
        // bytes=A- : from A to the end.
        (Some(a), None) if last.is_empty() => within(a, u64::MAX, len),
        (Some(a), Some(b)) if a <= b => within(a, b, len),
        _ => ByteRange::Whole,
    }
}

fn within(start: u64, end: u64, len: u64) -> ByteRange {
    if start >= len {
        ByteRange::Unsatisfiable
    } else {
        ByteRange::Part {
            start,
            end: end.min(len - 1),
        }
    }
}

/// A non-empty run of ASCII digits as a number (None on overflow too).
fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::ByteRange::*;
    use super::*;

    #[test]
    fn single_ranges() {
        assert_eq!(parse(Some("bytes=0-9"), 100), Part { start: 0, end: 9 });
        assert_eq!(parse(Some("bytes=90-"), 100), Part { start: 90, end: 99 });
        assert_eq!(
            parse(Some("bytes=90-500"), 100),
            Part { start: 90, end: 99 }
        );
        assert_eq!(parse(Some("bytes=-10"), 100), Part { start: 90, end: 99 });
        assert_eq!(parse(Some("bytes=-500"), 100), Part { start: 0, end: 99 });
        assert_eq!(parse(Some("Bytes= 5-5"), 100), Part { start: 5, end: 5 });
    }

    #[test]
    fn unsatisfiable_and_ignored() {
        assert_eq!(parse(Some("bytes=100-"), 100), Unsatisfiable);
        assert_eq!(parse(Some("bytes=100-200"), 100), Unsatisfiable);
        assert_eq!(parse(Some("bytes=-0"), 100), Unsatisfiable);
        assert_eq!(parse(Some("bytes=0-"), 0), Unsatisfiable);
        assert_eq!(parse(None, 100), Whole);
        assert_eq!(parse(Some("items=0-9"), 100), Whole);
        assert_eq!(parse(Some("bytes=9-0"), 100), Whole);
        assert_eq!(parse(Some("bytes=0-1,5-6"), 100), Whole);
        assert_eq!(parse(Some("bytes=a-b"), 100), Whole);
        assert_eq!(parse(Some("bytes=-"), 100), Whole);
        assert_eq!(parse(Some("bytes=99999999999999999999-"), 100), Whole);
    }
}
