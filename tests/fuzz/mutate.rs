//! The mutators: each changes a request in one of the ways the issue names
//! (bit flips, byte insertion and deletion, dictionary splices, duplicated
//! and truncated lines, changed chunk sizes), plus a splice of two seeds.

use crate::common::sansio::Rng;

/// The mutators by name, in the order `apply` numbers them.
pub const MUTATORS: [&str; 8] = [
    "bit flip",
    "insert byte",
    "delete bytes",
    "splice token",
    "duplicate line",
    "truncate line",
    "chunk size",
    "crossover",
];

/// HTTP tokens spliced into requests: the framing words and the bytes that
/// delimit everything (CR, LF, SP, `:`), and what makes versions, targets
/// and field values special.
const DICTIONARY: &[&[u8]] = &[
    b"Transfer-Encoding",
    b"chunked",
    b"Content-Length",
    b"\r",
    b"\n",
    b" ",
    b":",
    b"\r\n",
    b"\r\n\r\n",
    b"Transfer-Encoding: chunked\r\n",
    b"Content-Length: 5\r\n",
    b"Expect: 100-continue\r\n",
    b"Connection: close\r\n",
    b"Host: b\r\n",
    b"gzip",
    b",",
    b";",
    b"\t",
    b"\0",
    b"0",
    b"0\r\n\r\n",
    b"HTTP/1.0",
    b"HTTP/1.9",
    b"HTTP/2.0",
    b"HEAD",
    b"http://",
    b"*",
    b"#",
    b"@",
    b"ffffffffffffffffff",
    b"99999999999999999999",
];

/// Bytes that mean something in a request head or chunked framing.
const SPECIAL: &[u8] = b"\r\n :;,\t\0\x7f\xff0123456789aAfFxX-+\"\\/%?.#@[]*";

/// Applies mutator `which` (an index into `MUTATORS`) to `v`; `corpus`
/// gives the other request a crossover splices in.
pub fn apply(rng: &mut Rng, v: &mut Vec<u8>, which: usize, corpus: &[&[u8]]) {
    let at = rng.below(v.len() + 1);
    match which {
        0 if !v.is_empty() => {
            let i = at.min(v.len() - 1);
            v[i] ^= 1 << rng.below(8);
        }
        1 => {
            let b = if rng.below(2) == 0 {
                *rng.pick(SPECIAL)
            } else {
                rng.next() as u8
            };
            v.insert(at, b);
        }
        2 if !v.is_empty() => {
            let end = (at + 1 + rng.below(8)).min(v.len());
            v.drain(at.min(end)..end);
        }
        3 => {
            let token = rng.pick(DICTIONARY);
            // Half the time at the start of a line, where field names and
            // chunk sizes go; otherwise anywhere, over or between bytes.
            let at = if rng.below(2) == 0 {
                let starts = line_starts(v);
                *rng.pick(&starts)
            } else {
                at
            };
            let over = if rng.below(3) == 0 {
                (at + token.len()).min(v.len())
            } else {
                at
            };
            v.splice(at..over, token.iter().copied());
        }
        4 => {
            let (s, e) = line_at(v, at);
            let copies = 1 + rng.below(3);
            let line = v[s..e].repeat(copies);
            v.splice(e..e, line);
        }
        5 => {
            // Cut a line short, keeping its terminator or (a third of the
            // time) joining it to the next; or end the input there.
            let (s, e) = line_at(v, at);
            let body_end = v[s..e]
                .iter()
                .position(|&b| b == b'\r' || b == b'\n')
                .map_or(e, |i| s + i);
            let cut = s + rng.below(body_end - s + 1);
            match rng.below(6) {
                0 => v.truncate(cut),
                1 | 2 => {
                    v.drain(cut..e);
                }
                _ => {
                    v.drain(cut..body_end);
                }
            }
        }
        6 => change_size(rng, v),
        7 => {
            let other = rng.pick(corpus);
            let from = rng.below(other.len() + 1);
            let len = rng.below(other.len() - from + 1);
            let at = if rng.below(2) == 0 { v.len() } else { at };
            v.splice(at..at, other[from..from + len].iter().copied());
        }
        // A deletion or flip of nothing: insert instead.
        _ => v.insert(at, *rng.pick(SPECIAL)),
    }
}

/// Where each line starts (0 included), never empty.
fn line_starts(v: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        v.iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .map(|(i, _)| i + 1),
    );
    starts
}

/// The line holding byte `at`: its start and the end past its LF.
fn line_at(v: &[u8], at: usize) -> (usize, usize) {
    let at = at.min(v.len());
    let s = v[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let e = v[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(v.len(), |i| at + i + 1);
    (s, e)
}

/// Rewrites one chunk size (a line after the head that starts with hex
/// digits) or, if there is none, one Content-Length value: off by one,
/// zero, huge, overflowing, or with leading zeros.
fn change_size(rng: &mut Rng, v: &mut Vec<u8>) {
    let head_end = v
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(v.len(), |i| i + 4);
    let mut sizes: Vec<(usize, usize, bool)> = line_starts(v)
        .into_iter()
        .filter(|&s| s >= head_end)
        .map(|s| {
            (
                s,
                v[s..].iter().take_while(|b| b.is_ascii_hexdigit()).count(),
                true,
            )
        })
        .filter(|&(_, n, _)| n > 0)
        .collect();
    if sizes.is_empty() {
        const FIELD: &[u8] = b"content-length:";
        sizes = v
            .windows(FIELD.len())
            .enumerate()
            .filter(|(_, w)| w.eq_ignore_ascii_case(FIELD))
            .map(|(i, _)| {
                let s = i + FIELD.len();
                let s = s + v[s..].iter().take_while(|&&b| b == b' ').count();
                (
                    s,
                    v[s..].iter().take_while(|b| b.is_ascii_digit()).count(),
                    false,
                )
            })
            .collect();
    }
    let Some(&(s, n, hex)) = sizes.get(rng.below(sizes.len())) else {
        return v.insert(0, b'0');
    };
    let radix = if hex { 16 } else { 10 };
    let old = std::str::from_utf8(&v[s..s + n])
        .ok()
        .and_then(|t| u64::from_str_radix(t, radix).ok())
        .unwrap_or(0);
    let new = match rng.below(7) {
        0 => old.saturating_add(1),
        1 => old.saturating_sub(1),
        2 => 0,
        3 => rng.below(64) as u64,
        4 => 1 << (10 + rng.below(40)),
        5 => u64::MAX,
        _ => old,
    };
    let mut text = if hex {
        format!("{new:x}")
    } else {
        new.to_string()
    };
    if rng.below(4) == 0 {
        text.insert_str(0, "000");
    }
    if rng.below(8) == 0 {
        // Past u64: the overflow checks.
        text.push_str("ff");
    }
    v.splice(s..s + n, text.into_bytes());
}
