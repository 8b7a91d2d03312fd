//! Request-path safety: decode once and refuse anything that could name a
//! file outside the root, before any filesystem call sees it.

use std::borrow::Cow;

use crate::http::scan::find_any;

/// Why a path was refused; every case is answered with 400.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathError {
    BadPercentEncoding,
    EncodedSeparator,
    Backslash,
    Nul,
    NotUtf8,
    DotDot,
}

/// Percent-decodes `raw` exactly once and splits it into segments, dropping
/// empty and `.` ones. Refuses `..` (never resolved), encoded `/`, any
/// backslash or NUL, and non-UTF-8 bytes (so overlong forms like `%c0%ae`).
/// Decoding once keeps `%252e` literal: it names a file called `%2e`.
pub fn decode_path(raw: &str) -> Result<Vec<String>, PathError> {
    let mut segments = Vec::new();
    for seg in raw.split('/') {
        let bytes = percent_decode(seg)?;
        let seg = String::from_utf8(bytes).map_err(|_| PathError::NotUtf8)?;
        match seg.as_str() {
            "" | "." => {}
            ".." => return Err(PathError::DotDot),
            _ => segments.push(seg),
        }
    }
    Ok(segments)
}

/// The key a static file is found under: `decode_path`'s segments joined
/// by `/`, with the same refusals. Borrowed from `raw` when it already is
/// that key (nearly every path), so most requests allocate nothing.
pub fn path_key(raw: &str) -> Result<Cow<'_, str>, PathError> {
    let rest = raw.strip_prefix('/').unwrap_or(raw);
    if is_plain(rest.as_bytes()) {
        return Ok(Cow::Borrowed(rest));
    }
    Ok(Cow::Owned(decode_path(raw)?.join("/")))
}

/// Whether a path (leading slash removed) already is its own key: no `%`,
/// backslash or NUL, and no empty, `.` or `..` segment.
fn is_plain(path: &[u8]) -> bool {
    let plain_segment = |s: &[u8]| !matches!(s, b"" | b"." | b"..");
    let mut rest = path;
    while let Some(i) = find_any(rest, [b'/', b'%', b'\\', 0]) {
        if rest[i] != b'/' || !plain_segment(&rest[..i]) {
            return false;
        }
        rest = &rest[i + 1..];
    }
    plain_segment(rest)
}

fn percent_decode(seg: &str) -> Result<Vec<u8>, PathError> {
    let b = seg.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = match b[i] {
            b'%' => {
                let hex = b.get(i + 1..i + 3).ok_or(PathError::BadPercentEncoding)?;
                let v = std::str::from_utf8(hex)
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or(PathError::BadPercentEncoding)?;
                if v == b'/' {
                    return Err(PathError::EncodedSeparator);
                }
                i += 3;
                v
            }
            c => {
                i += 1;
                c
            }
        };
        match c {
            b'\\' => return Err(PathError::Backslash),
            0 => return Err(PathError::Nul),
            _ => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_plain_and_encoded_names() {
        assert_eq!(decode_path("/a/b%20c.txt").unwrap(), ["a", "b c.txt"]);
        assert_eq!(decode_path("/./a//b").unwrap(), ["a", "b"]);
        assert_eq!(decode_path("/%252e%252e/x").unwrap(), ["%2e%2e", "x"]);
        assert!(decode_path("/").unwrap().is_empty());
    }

    #[test]
    fn refuses_traversal_forms() {
        for bad in [
            "/../etc/passwd",
            "/%2e%2e/etc/passwd",
            "/..%2fetc%2fpasswd",
            "/a/%2E%2E/b",
            "/%c0%ae%c0%ae/etc/passwd",
            "/..\\etc\\passwd",
            "/%5c..%5cetc",
            "/a%00b",
            "/%zz",
            "/%2",
        ] {
            assert!(decode_path(bad).is_err(), "{bad}");
            assert!(path_key(bad).is_err(), "{bad}");
        }
    }

    /// Random and mutated paths never panic, and whatever is accepted has
    /// only segments that cannot leave the root.
    #[test]
    fn random_paths_never_yield_an_escaping_segment_and_keys_match_the_segments() {
        // xorshift64*: deterministic, so a failure reproduces.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_F491_4F6C_DD1D)
        };
        const PIECES: [&str; 16] = [
            "/",
            ".",
            "..",
            "%2e",
            "%2E",
            "%2f",
            "%5c",
            "\\",
            "%00",
            "%c0%ae",
            "%25",
            "a",
            "%",
            "%e2%80%ae",
            "%ff",
            "b.txt",
        ];
        for _ in 0..200_000 {
            let mut raw = String::from("/");
            for _ in 0..(next() % 10) {
                raw.push_str(PIECES[(next() % PIECES.len() as u64) as usize]);
            }
            assert_eq!(
                path_key(&raw).map(|k| k.into_owned()),
                decode_path(&raw).map(|s| s.join("/")),
                "{raw:?}"
            );
            if let Ok(segments) = decode_path(&raw) {
                for seg in &segments {
                    assert!(
                        seg != ".." && seg != "." && !seg.is_empty(),
                        "{raw:?} gave {seg:?}"
                    );
                    assert!(!seg.contains(['/', '\\', '\0']), "{raw:?} gave {seg:?}");
                }
            }
        }
    }
}
