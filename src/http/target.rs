//! The request target: its path and query, found in one search, with
//! the forms a server refuses (a fragment, anything but origin-form,
//! absolute-form or `*`).

use std::ops::Range;

use super::error::ProtoError;
use super::scan::find_any;

/// Splits a target into path and query ranges (offsets relative to `base`).
/// Absolute-form targets lose their scheme and authority. A target with a
/// fragment is refused: the pass that looks for the query looks for it.
pub(crate) fn split_target(
    t: &[u8],
    base: usize,
) -> Result<(Range<usize>, Option<Range<usize>>), ProtoError> {
    let lower_starts = |p: &[u8]| t.len() >= p.len() && t[..p.len()].eq_ignore_ascii_case(p);
    let path_start = if t.starts_with(b"/") || t == b"*" {
        0
    } else if lower_starts(b"http://") || lower_starts(b"https://") {
        let after = t.iter().position(|&b| b == b':').unwrap_or(0) + 3;
        let rest = &t[after..];
        after
            + rest
                .iter()
                .position(|&b| matches!(b, b'/' | b'?'))
                .unwrap_or(rest.len())
    } else {
        return Err(ProtoError::bad_request("invalid request target"));
    };
    // The first `?` starts the query: none lies before `path_start`, which
    // is the first `/` or `?` after an absolute form's authority.
    let mut q = None;
    let mut from = 0;
    while let Some(i) = find_any(&t[from..], [b'?', b'#']).map(|i| from + i) {
        if t[i] == b'#' {
            return Err(ProtoError::bad_request("invalid request target"));
        }
        q = q.or(Some(i));
        from = i + 1;
    }
    let path_end = q.unwrap_or(t.len());
    let query = q.map(|i| base + i + 1..base + t.len());
    Ok((base + path_start..base + path_end, query))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pass that finds the query refuses a fragment anywhere, also in
    /// an absolute-form target's authority.
    #[test]
    fn targets_split_once_and_refuse_fragments() {
        let parts = |t: &str| {
            split_target(t.as_bytes(), 0)
                .map(|(p, q)| (t[p].to_string(), q.map(|q| t[q].to_string())))
        };
        assert_eq!(parts("/a?b?c").unwrap(), ("/a".into(), Some("b?c".into())));
        let long = parts("/abcdefgh/ijklmn?q=12345678?r").unwrap();
        assert_eq!(
            long,
            ("/abcdefgh/ijklmn".into(), Some("q=12345678?r".into()))
        );
        assert_eq!(parts("http://h?x").unwrap(), ("".into(), Some("x".into())));
        assert_eq!(parts("http://h/p").unwrap(), ("/p".into(), None));
        for bad in [
            "/a?b#c",
            "/#",
            "http://h/p#x",
            "http://h#/p",
            "/abcdefgh?12345678#",
        ] {
            assert!(parts(bad).is_err(), "{bad}");
        }
    }
}
