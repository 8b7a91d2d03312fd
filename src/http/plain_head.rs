//! The plain request head (what load generators, browsers and curl send)
//! parsed in one pass without httparse; anything else is left to it.
//!
//! Why a second parser: much of httparse's work is general machinery
//! (uninitialised header slots, SIMD dispatch, a UTF-8 check of the target)
//! that a head of plain ASCII does not need. This one accepts only a strict
//! subset of what httparse accepts, and where it accepts it finds the same
//! parts: `parse` answers None for anything outside the subset (another
//! version, a bare LF, a tab, obs-text, a space before a line end, an empty
//! value, too many fields, a head over the limits, or a head not yet
//! complete), and the caller hands those to httparse, which also gives every
//! error. The unit test below holds the two to the same parts over mutated
//! heads; tests/fuzz.rs feeds every case whole (this path) and byte by byte
//! (httparse's) and wants the same events.

use std::ops::Range;

use super::limits::{MAX_HEADERS, MAX_HEADER_BYTES, MAX_REQUEST_LINE};
use super::scan::{HIGH, ONES};

/// A field's name and value as ranges into the head's bytes.
pub(crate) type FieldRanges = (Range<usize>, Range<usize>);

/// The request line's parts, as ranges into the head's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub method: Range<usize>,
    pub target: Range<usize>,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
}

/// tchar (RFC 9110 5.6.2): the bytes of a method and of a field name.
const TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    t
};

/// How many bytes from `data[from]` on are tchars. Byte by byte, as methods
/// and names are too short for a word test to pay; an iterator, so no bounds
/// check per byte.
fn token_run(data: &[u8], from: usize) -> usize {
    let rest = data.get(from..).unwrap_or_default();
    rest.iter()
        .position(|&b| !TOKEN[b as usize])
        .unwrap_or(rest.len())
}

/// How many bytes from `data[from]` on lie in `lowest..=b'~'`.
///
/// Eight bytes at a time, as targets and values are most of a head. In each
/// word a byte below `lowest` sets its high bit in `x - lowest` (while `!x`
/// keeps it), and a byte of 0x7F or more sets it in `x + 1` or in `x`. A
/// borrow or carry only flows from such a byte to the bytes after it, so the
/// first flagged byte (the lowest, read little-endian) is the first one out
/// of range.
fn ascii_run(data: &[u8], from: usize, lowest: u8) -> usize {
    let mut i = from;
    while let Some(word) = data.get(i..i + 8) {
        let x = u64::from_le_bytes(word.try_into().unwrap());
        let below = x.wrapping_sub(ONES * u64::from(lowest)) & !x;
        let above = x.wrapping_add(ONES) | x;
        let out = (below | above) & HIGH;
        if out != 0 {
            return i - from + out.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    while i < data.len() && (lowest..=b'~').contains(&data[i]) {
        i += 1;
    }
    i - from
}

/// The request line and fields of a complete plain head at the start of
/// `data`, with the head's length; the fields are appended to `fields`
/// (left empty on None). None: not a plain head, or not all of it yet.
// Out of line: inlined into `ServerConn::next_event`, its loops lose their
// registers.
#[inline(never)]
pub(crate) fn parse(data: &[u8], fields: &mut Vec<FieldRanges>) -> Option<(Line, usize)> {
    debug_assert!(fields.is_empty());
    let parsed = parse_into(data, fields);
    if parsed.is_none() {
        fields.clear();
    }
    parsed
}

fn parse_into(data: &[u8], fields: &mut Vec<FieldRanges>) -> Option<(Line, usize)> {
    let method_end = token_run(data, 0);
    let target_start = method_end + 1;
    if method_end == 0 || data.get(method_end) != Some(&b' ') {
        return None;
    }
    // Visible ASCII: httparse also takes bytes above 0x7F, then checks
    // they are UTF-8; those heads go to it.
    let target_end = target_start + ascii_run(data, target_start, b'!');
    let minor = match data.get(target_end..target_end + 11)? {
        b" HTTP/1.1\r\n" => 1,
        b" HTTP/1.0\r\n" => 0,
        _ => return None,
    };
    let line_end = target_end + " HTTP/1.1".len();
    if target_end == target_start || line_end > MAX_REQUEST_LINE {
        return None;
    }
    // The same bound as the httparse path's: the fields, with their line
    // ends, within MAX_HEADER_BYTES of the request line's LF.
    let limit = line_end + 1 + MAX_HEADER_BYTES;
    let mut at = line_end + 2;
    loop {
        if data.get(at..at + 2)? == b"\r\n" {
            let n = at + 2;
            let line = Line {
                method: 0..method_end,
                target: target_start..target_end,
                minor,
            };
            return (n <= limit).then_some((line, n));
        }
        if at > limit || fields.len() == MAX_HEADERS {
            return None;
        }
        let name_end = at + token_run(data, at);
        if name_end == at || data.get(name_end) != Some(&b':') {
            return None;
        }
        let mut value_start = name_end + 1;
        while data.get(value_start) == Some(&b' ') {
            value_start += 1;
        }
        let value_end = value_start + ascii_run(data, value_start, b' ');
        // httparse trims trailing spaces and tabs, and an empty value's
        // range starts where it stops looking: both left to it.
        if value_end == value_start
            || data[value_end - 1] == b' '
            || data.get(value_end..value_end + 2)? != b"\r\n"
        {
            return None;
        }
        fields.push((at..name_end, value_start..value_end));
        at = value_end + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::MaybeUninit;

    /// What httparse finds in `data`, as the same ranges; None unless the
    /// head is complete and valid.
    fn httparse_parts(data: &[u8]) -> Option<(Line, Vec<FieldRanges>, usize)> {
        let mut slots = [const { MaybeUninit::<httparse::Header>::uninit() }; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut []);
        let n = match req.parse_with_uninit_headers(data, &mut slots) {
            Ok(httparse::Status::Complete(n)) => n,
            _ => return None,
        };
        let at = |s: &[u8]| {
            let start = s.as_ptr() as usize - data.as_ptr() as usize;
            start..start + s.len()
        };
        let line = Line {
            method: at(req.method?.as_bytes()),
            target: at(req.path?.as_bytes()),
            minor: req.version?,
        };
        let fields = req
            .headers
            .iter()
            .map(|h| (at(h.name.as_bytes()), at(h.value)))
            .collect();
        Some((line, fields, n))
    }

    fn plain(data: &[u8]) -> Option<(Line, Vec<FieldRanges>, usize)> {
        let mut fields = vec![];
        let got = parse(data, &mut fields);
        if got.is_none() {
            assert!(fields.is_empty(), "fields left behind for {data:?}");
        }
        got.map(|(line, n)| (line, fields, n))
    }

    const HEADS: &[&str] = &[
        "GET /500B.html HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: 127.0.0.1:8080\r\nUser-Agent: loadlab/0.1.0\r\nAccept: */*\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: t\r\n\r\n",
        "POST /files/a?x=1 HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc",
        "OPTIONS * HTTP/1.1\r\nHost: t\r\nX-A: b c\r\n\r\n",
        "DELETE http://h/p HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"x\"\r\n\r\n",
    ];

    /// The common heads take this path and give httparse's parts.
    #[test]
    fn plain_heads_parse_as_httparse_parses_them() {
        for head in HEADS {
            let got = plain(head.as_bytes());
            assert!(got.is_some(), "{head:?} was left to httparse");
            assert_eq!(got, httparse_parts(head.as_bytes()), "{head:?}");
        }
    }

    /// Heads outside the subset are left to httparse, valid or not.
    #[test]
    fn anything_else_is_left_to_httparse() {
        for head in [
            "GET / HTTP/1.1\nHost: t\n\n",
            "GET / HTTP/1.2\r\nHost: t\r\n\r\n",
            "GET / HTTP/1.1\r\nHost:\tt\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: t \r\n\r\n",
            "GET / HTTP/1.1\r\nX:\r\n\r\n",
            "GET /\u{e9} HTTP/1.1\r\nHost: t\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: t\r\n\r",
            "GET / HTTP/1.1\r\nHost : t\r\n\r\n",
            " GET / HTTP/1.1\r\nHost: t\r\n\r\n",
            "GET  / HTTP/1.1\r\nHost: t\r\n\r\n",
        ] {
            assert_eq!(plain(head.as_bytes()), None, "{head:?}");
        }
        let many: String = (0..=MAX_HEADERS).map(|i| format!("X-{i}: v\r\n")).collect();
        let head = format!("GET / HTTP/1.1\r\n{many}\r\n");
        assert_eq!(plain(head.as_bytes()), None);
        let fields: String = (0..MAX_HEADERS).map(|i| format!("X-{i}: v\r\n")).collect();
        let head = format!("GET / HTTP/1.1\r\n{fields}\r\n");
        assert_eq!(plain(head.as_bytes()), httparse_parts(head.as_bytes()));
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_REQUEST_LINE));
        assert_eq!(plain(long.as_bytes()), None);
        let big = format!(
            "GET / HTTP/1.1\r\nX: {}\r\n\r\n",
            "v".repeat(MAX_HEADER_BYTES)
        );
        assert_eq!(plain(big.as_bytes()), None);
    }

    /// The word-at-a-time run ends where a byte-by-byte one does, for
    /// bytes at and around both ends of the range, at every offset.
    #[test]
    fn ascii_run_ends_where_a_byte_loop_does() {
        const EDGES: &[u8] = b"\x00\x1f \x21~\x7f\x80\xff\xdfa";
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 40) as usize;
            let data: Vec<u8> = (0..len)
                .map(|i| {
                    let r = state.rotate_left(i as u32 * 5);
                    // Mostly in range, so long runs and late exits occur.
                    match r % 8 {
                        0 => EDGES[(r >> 8) as usize % EDGES.len()],
                        _ => b'a' + (r >> 8) as u8 % 26,
                    }
                })
                .collect();
            for lowest in [b' ', b'!'] {
                for from in 0..=len {
                    let naive = data[from..]
                        .iter()
                        .take_while(|&&b| (lowest..=b'~').contains(&b))
                        .count();
                    assert_eq!(ascii_run(&data, from, lowest), naive, "{data:?} {from}");
                }
            }
        }
    }

    /// Over many mutated heads (bytes replaced, inserted, removed and cut
    /// short), whenever this path answers, httparse finds the same parts.
    #[test]
    fn every_head_this_path_takes_httparse_parses_the_same() {
        const ODD: &[u8] = b"\r\n \t:/?%\"\x7f\x80\xff\x00aZ0-_HTP.1";
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |below: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % below as u64) as usize
        };
        let (mut taken, mut left) = (0, 0);
        for _ in 0..200_000 {
            let mut head = HEADS[next(HEADS.len())].as_bytes().to_vec();
            for _ in 0..1 + next(3) {
                let at = next(head.len() + 1);
                let byte = if next(2) == 0 {
                    ODD[next(ODD.len())]
                } else {
                    next(256) as u8
                };
                match next(4) {
                    0 if at < head.len() => head[at] = byte,
                    1 => head.insert(at, byte),
                    2 if at < head.len() => drop(head.remove(at)),
                    _ => head.truncate(at),
                }
            }
            match plain(&head) {
                Some(got) => {
                    taken += 1;
                    assert_eq!(Some(got), httparse_parts(&head), "{head:?}");
                }
                None => left += 1,
            }
        }
        // Both outcomes are common, so both were tested.
        assert!(
            taken > 20_000 && left > 20_000,
            "taken {taken}, left {left}"
        );
    }
}
