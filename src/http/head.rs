//! Request heads: a head found in received bytes, parsed (a plain head by
//! `plain_head`, any other by httparse) and checked into a `RequestHead`.

use std::mem::MaybeUninit;
use std::ops::Range;

use super::error::ProtoError;
use super::framing::{body_framing, list_items, Framing, FramingFields, Message};
use super::limits::{MAX_HEADERS, MAX_HEADER_BYTES, MAX_REQUEST_LINE};
use super::plain_head::{self, Line};
use super::request::{BodyLength, HeadBuffers, Method, RequestHead, Version};
use super::scan::find_any;
use super::target::split_target;

/// How far the search through a head that is still arriving has got, so
/// a head trickling in byte by byte is not searched, checked or copied
/// again from its start at every byte (which made the work grow with the
/// square of its size). Offsets count from the head's first byte.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeadScan {
    /// The request line, once all of it has arrived and passed its checks.
    line: Option<RequestLine>,
    /// Bytes searched so far: for the request line's LF, then for the
    /// blank line that ends the head.
    searched: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RequestLine {
    /// Index of the LF ending it.
    len: usize,
    /// Index of a minor version digit above 1, to be read as 1.
    minor: Option<usize>,
}

impl HeadScan {
    /// The request line once it has arrived, found and checked only once.
    fn request_line(&mut self, data: &[u8]) -> Result<Option<RequestLine>, ProtoError> {
        if self.line.is_some() {
            return Ok(self.line);
        }
        let from = self.searched.min(data.len());
        let len = match data[from..].iter().position(|&b| b == b'\n') {
            Some(i) => from + i,
            None if data.len() > MAX_REQUEST_LINE + 1 => {
                return Err(ProtoError::new(414, "request line too long"))
            }
            None => {
                self.searched = data.len();
                return Ok(None);
            }
        };
        let line = data[..len].strip_suffix(b"\r").unwrap_or(&data[..len]);
        if line.len() > MAX_REQUEST_LINE {
            return Err(ProtoError::new(414, "request line too long"));
        }
        let minor = check_version(line)?;
        self.line = Some(RequestLine { len, minor });
        self.searched = len;
        Ok(self.line)
    }
}

/// Parses the request head at the start of `data` if all of it has
/// arrived: the head and its length, or None to wait for more bytes.
/// `scan` carries what earlier calls on a shorter `data` found; a new head
/// starts with `HeadScan::default()`. The head is built in `spare`'s
/// buffers (taken only when the head is complete). Two paths: a plain
/// head that arrived whole (`plain_head`), and step by step for the rest,
/// which gives every error in its order; tests/fuzz.rs feeds every case
/// whole and byte by byte and wants the same events from both.
pub(crate) fn parse_request(
    data: &[u8],
    scan: &mut HeadScan,
    spare: &mut HeadBuffers,
) -> Result<Option<(RequestHead, usize)>, ProtoError> {
    if *scan == HeadScan::default() {
        if let Some((line, n)) = plain_head::parse(data, &mut spare.1) {
            return build_request(data, line, n, spare).map(|head| Some((head, n)));
        }
    }
    let Some(line) = scan.request_line(data)? else {
        return Ok(None);
    };
    // A later HTTP/1 minor version is served as HTTP/1.1 (RFC 9110 2.5),
    // but httparse refuses it: wherever httparse runs, it reads a copy that
    // says 1.1, with every offset unchanged.
    let patched = |d: &[u8]| -> Vec<u8> {
        let mut copy = d.to_vec();
        if let Some(digit) = line.minor {
            copy[digit] = b'1';
        }
        copy
    };
    let check = |d: &[u8]| match line.minor {
        Some(_) => check_lines(&patched(d)),
        None => check_lines(d),
    };

    // The first byte past the largest head allowed. Malformed lines (a
    // bare CR, a field line without a colon) are refused as soon as they
    // are complete, not after the header timeout: a client that sent one
    // is not going to send a valid head. Before 431, the lines that fit
    // are checked, so a head gets the same answer whether it arrives whole
    // or byte by byte.
    let limit = line.len + MAX_HEADER_BYTES + 1;
    let from = scan.searched.max(line.len);
    let Some(head_end) = find_head_end(data, from) else {
        if data.len() >= limit || data[from..].contains(&b'\n') {
            check(&data[..data.len().min(limit)])?;
        }
        if data.len() >= limit {
            return Err(ProtoError::new(431, "header section too large"));
        }
        scan.searched = data.len();
        return Ok(None);
    };
    if head_end >= limit {
        check(&data[..limit])?;
        return Err(ProtoError::new(431, "header section too large"));
    }
    let copy;
    let data = match line.minor {
        Some(_) => {
            copy = patched(&data[..head_end]);
            &copy[..]
        }
        None => data,
    };
    let Some((req_n, build)) = parse_head_with(data, |req, n| build_parsed(data, req, n, spare))?
    else {
        return Ok(None);
    };
    Ok(Some((build?, req_n)))
}

/// Runs httparse over the complete lines of what has arrived of a head:
/// the error of the first malformed one, if any. A line still arriving is
/// not judged, so the answer does not depend on where reads split it.
fn check_lines(data: &[u8]) -> Result<(), ProtoError> {
    let complete = data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    parse_head_with(&data[..complete], |_, _| ()).map(drop)
}

/// Parses the head at the start of `data` and hands the parsed request and
/// its length to `then`; None when the head is not complete.
fn parse_head_with<T>(
    data: &[u8],
    then: impl FnOnce(&httparse::Request<'_, '_>, usize) -> T,
) -> Result<Option<(usize, T)>, ProtoError> {
    let mut slots = [const { MaybeUninit::<httparse::Header>::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let n = match req.parse_with_uninit_headers(data, &mut slots) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(ProtoError::new(431, "too many header fields"))
        }
        Err(httparse::Error::Version) => {
            return Err(ProtoError::bad_request("malformed HTTP version"))
        }
        Err(httparse::Error::Token) => return Err(ProtoError::bad_request("malformed method")),
        Err(httparse::Error::HeaderName) => {
            return Err(ProtoError::bad_request("malformed header field name"))
        }
        Err(httparse::Error::HeaderValue) => {
            return Err(ProtoError::bad_request("malformed header field value"))
        }
        Err(httparse::Error::NewLine) => {
            return Err(ProtoError::bad_request("bare CR or malformed line ending"))
        }
        Err(_) => return Err(ProtoError::bad_request("malformed request")),
    };
    Ok(Some((n, then(&req, n))))
}

/// Index just past the blank line ending a head, searching from `from`.
fn find_head_end(data: &[u8], from: usize) -> Option<usize> {
    let mut i = from.saturating_sub(3);
    while let Some(p) = data[i..].iter().position(|&b| b == b'\n') {
        let nl = i + p;
        match data.get(nl + 1) {
            Some(b'\n') => return Some(nl + 2),
            Some(b'\r') if data.get(nl + 2) == Some(&b'\n') => return Some(nl + 3),
            _ => i = nl + 1,
        }
    }
    None
}

/// Checks the version at the end of the request line. 505 for a
/// well-formed version of another major (HTTP/2.0, HTTP/0.9); for HTTP/1.x
/// with x above 1, the index of the minor digit, to be served as 1.1.
/// Malformed versions are left to the parser (400).
fn check_version(line: &[u8]) -> Result<Option<usize>, ProtoError> {
    let Some(sp) = line.iter().rposition(|&b| b == b' ') else {
        return Ok(None);
    };
    match &line[sp + 1..] {
        b"HTTP/1.1" | b"HTTP/1.0" => Ok(None),
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', d2] if d2.is_ascii_digit() => {
            Ok(Some(line.len() - 1))
        }
        [b'H', b'T', b'T', b'P', b'/', d1, b'.', d2]
            if d1.is_ascii_digit() && d2.is_ascii_digit() =>
        {
            Err(ProtoError::new(505, "HTTP version not supported"))
        }
        [b'H', b'T', b'T', b'P', b'/', d] if d.is_ascii_digit() => {
            Err(ProtoError::new(505, "HTTP version not supported"))
        }
        _ => Ok(None),
    }
}

fn offset(base: &[u8], part: &[u8]) -> Range<usize> {
    let s = part.as_ptr() as usize - base.as_ptr() as usize;
    s..s + part.len()
}

/// `build_request` for what httparse found: its parts as ranges.
fn build_parsed(
    data: &[u8],
    req: &httparse::Request<'_, '_>,
    n: usize,
    spare: &mut HeadBuffers,
) -> Result<RequestHead, ProtoError> {
    let at = |part: &str| offset(data, part.as_bytes());
    let line = Line {
        method: at(req.method.unwrap_or("")),
        target: at(req.path.unwrap_or("")),
        minor: req.version.unwrap_or(1),
    };
    // Sized once: a new connection's list would otherwise grow as it fills.
    let fields = &mut spare.1;
    fields.reserve(req.headers.len());
    fields.extend(
        req.headers
            .iter()
            .map(|h| (offset(data, h.name.as_bytes()), offset(data, h.value))),
    );
    build_request(data, line, n, spare)
}

/// Checks a parsed request's line and fields (`spare.1`, ranges into
/// `data`) and keeps its first `n` bytes as the head.
fn build_request(
    data: &[u8],
    line: Line,
    n: usize,
    spare: &mut HeadBuffers,
) -> Result<RequestHead, ProtoError> {
    // Taken first, so that an error leaves `spare` empty rather than
    // holding this head's field ranges. The fields are in; the head's
    // bytes buffer is empty.
    let (mut raw, headers) = std::mem::take(spare);
    // CONNECT is not a Method: a server that is not a proxy implements
    // none, and answering here comes before its authority-form target
    // would be judged as a malformed path.
    let method = Method::from_bytes(&data[line.method])
        .ok_or(ProtoError::new(501, "method not implemented"))?;
    let version = match line.minor {
        0 => Version::Http10,
        _ => Version::Http11,
    };
    let target_bytes = &data[line.target.clone()];
    // `*` is the asterisk-form, for OPTIONS only (RFC 9112 3.2.4); a
    // fragment (`#`, which split_target refuses) is never sent (RFC 9112
    // 3.2): both are malformed targets.
    if target_bytes == b"*" && method != Method::Options {
        return Err(ProtoError::bad_request("invalid request target"));
    }
    let target = line.target;
    let (path, query) = split_target(target_bytes, target.start)?;

    let mut hosts = 0;
    let mut framing = FramingFields::default();
    let (mut close, mut ka, mut expect) = (false, false, false);
    let (mut pre, mut range) = (false, false);
    for (name, value) in &headers {
        let (name, value) = (&data[name.clone()], &data[value.clone()]);
        pre |= name.len() > 2 && is_lower(&name[..3], b"if-");
        // By length first: most fields are none of these, and one compare
        // of lengths rules a name out.
        match name.len() {
            4 if is_lower(name, b"host") => {
                hosts += 1;
                if !valid_host(value) {
                    return Err(ProtoError::bad_request("invalid Host"));
                }
            }
            5 => range |= is_lower(name, b"range"),
            6 if is_lower(name, b"expect") => {
                expect |= is_lower(value.trim_ascii(), b"100-continue");
            }
            10 if is_lower(name, b"connection") => {
                let mut item = |t: &[u8]| {
                    close |= is_lower(t, b"close");
                    ka |= is_lower(t, b"keep-alive");
                };
                // Nearly always one option (ab and loadlab send
                // `Keep-Alive`): no splitting for it.
                match value.contains(&b',') {
                    false => item(value.trim_ascii()),
                    true => list_items(value).for_each(item),
                }
            }
            14 | 17 => {
                framing.add(name, value)?;
            }
            _ => {}
        }
    }
    if hosts > 1 || (hosts == 0 && version == Version::Http11) {
        return Err(ProtoError::bad_request("missing or duplicate Host"));
    }
    let body = match body_framing(Message::Request(version), &framing)? {
        Framing::Length(n) if n > 0 => BodyLength::Length(n),
        Framing::Chunked => BodyLength::Chunked,
        Framing::None | Framing::Length(_) | Framing::UntilClose => BodyLength::Empty,
    };
    raw.extend_from_slice(&data[..n]);
    Ok(RequestHead {
        raw,
        method,
        version,
        target,
        path,
        query,
        headers,
        keep_alive: !close && (version == Version::Http11 || ka),
        body,
        expect_continue: expect && version == Version::Http11,
        has_preconditions: pre,
        has_range: range,
    })
}

/// Whether `field`, a field name or value that httparse accepted, is
/// `lower` (lowercase letters, digits and `-`) in any case. Setting the
/// case bit (0x20) of each byte maps `A`-`Z` onto `a`-`z` and keeps every
/// other byte a parsed head can hold apart: the only others it maps onto
/// a digit or `-` are control characters, which httparse refuses in names
/// and values. Cheaper than `eq_ignore_ascii_case`, which lowercases both
/// sides byte by byte: it runs on every field of every request.
///
/// Eight bytes at a time: the case bit of every byte set with one OR of a
/// word is the same as byte by byte, and the names compared here are 4 to
/// 17 bytes long, so a word or two each.
fn is_lower(field: &[u8], lower: &[u8]) -> bool {
    debug_assert!(lower
        .iter()
        .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
    const CASE: u64 = 0x2020_2020_2020_2020;
    if field.len() != lower.len() {
        return false;
    }
    let words = lower.len() / 8;
    for w in 0..words {
        let word = |b: &[u8]| {
            let b = &b[w * 8..w * 8 + 8];
            u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        };
        if word(field) | CASE != word(lower) {
            return false;
        }
    }
    let i = words * 8;
    field[i..]
        .iter()
        .zip(&lower[i..])
        .all(|(&f, &l)| f | 0x20 == l)
}

/// A Host field value is `uri-host [ ":" port ]` (RFC 9110 7.2): an IP
/// literal in brackets, or a name of unreserved, percent-encoded and
/// sub-delimiter characters (RFC 3986 3.2.2). Empty is allowed (RFC 9112
/// 3.2: a target without an authority). Userinfo (`u@host`) and a path
/// (`a/b`) are not.
fn valid_host(v: &[u8]) -> bool {
    /// Bytes allowed in a reg-name: unreserved, `%` and sub-delims.
    const HOST_NAME_BYTE: [bool; 256] = {
        let mut t = [false; 256];
        let mut b = 0;
        while b < 256 {
            let c = b as u8;
            t[b] = c.is_ascii_alphanumeric()
                || matches!(c, b'-' | b'.' | b'_' | b'~' | b'%')
                || matches!(
                    c,
                    b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'='
                );
            b += 1;
        }
        t
    };
    let v = v.trim_ascii();
    let Some(rest) = v.strip_prefix(b"[") else {
        // A name, then digits after its colon: a colon is not a name byte,
        // so the first one ends the name. Found by a word search; each
        // part is then checked without a branch per byte, as every request
        // has a Host.
        let (name, port) = match find_any(v, [b':']) {
            Some(i) => (&v[..i], &v[i + 1..]),
            None => (v, &[][..]),
        };
        let name_ok = name
            .iter()
            .fold(true, |ok, &b| ok & HOST_NAME_BYTE[b as usize]);
        let port_ok = port.iter().fold(true, |ok, &b| ok & b.is_ascii_digit());
        return name_ok & port_ok;
    };
    let Some(end) = rest.iter().position(|&b| b == b']') else {
        return false;
    };
    let literal = &rest[..end];
    !literal.is_empty()
        && literal
            .iter()
            .all(|&b| b.is_ascii_hexdigit() || b == b':' || b == b'.' || b == b'v')
        && match &rest[end + 1..] {
            [] => true,
            [b':', port @ ..] => port.iter().all(u8::is_ascii_digit),
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time compare agrees with `eq_ignore_ascii_case` for
    /// every length around a word and every place a byte may differ.
    #[test]
    fn is_lower_matches_a_case_insensitive_compare() {
        for lower in [
            "te",
            "host",
            "connection",
            "content-length",
            "transfer-encoding",
        ] {
            let upper = lower.to_ascii_uppercase();
            assert!(is_lower(upper.as_bytes(), lower.as_bytes()), "{upper}");
            for i in 0..lower.len() {
                let mut other = lower.as_bytes().to_vec();
                other[i] ^= 0x01;
                assert!(!is_lower(&other, lower.as_bytes()), "{lower} at {i}");
            }
            assert!(!is_lower(&lower.as_bytes()[1..], lower.as_bytes()));
        }
    }

    /// The one-pass check of a name and port answers as the split at the
    /// last colon did.
    #[test]
    fn host_values_keep_their_answers() {
        for ok in [
            "",
            " t ",
            "127.0.0.1:80",
            "h:",
            ":80",
            "[::1]",
            "[::1]:8080",
            "a-b_c~d%20!$&'()*+,;=",
            "www.example-host.test:65535",
        ] {
            assert!(valid_host(ok.as_bytes()), "{ok:?}");
        }
        for bad in [
            "a:1:2",
            "a/b",
            "u@h",
            "h:8x",
            "[::1]x",
            "[]",
            "[::1",
            "[g]",
            "[::1]:8x",
            "www.example-host.test/x:1",
            "long-name.example:80:1",
            "long-name.example:8o",
        ] {
            assert!(!valid_host(bad.as_bytes()), "{bad:?}");
        }
    }

    /// A target with a multi-byte character where the scheme check looks
    /// (bytes 7 and 8) is refused with 400: the check, on `&str`, used to
    /// panic there. Refused heads leave no field ranges behind.
    #[test]
    fn odd_targets_are_refused_and_leave_nothing_behind() {
        for raw in [
            &b"GET aaaaaa\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n"[..],
            b"GET http:/\xc3\xa9x HTTP/1.1\r\nHost: h\r\n\r\n",
            b"GET x HTTP/1.1\r\nHost: h\r\n\r\n",
            b"FOO / HTTP/1.1\r\nHost: h\r\n\r\n",
        ] {
            let mut spare = HeadBuffers::default();
            let got = parse_request(raw, &mut HeadScan::default(), &mut spare);
            assert!(matches!(got, Err(ref e) if e.status >= 400), "{got:?}");
            assert!(spare.1.is_empty(), "{raw:?}");
        }
    }

    /// A Connection value of one option and a list of them mean the same.
    #[test]
    fn connection_options_with_and_without_a_list() {
        let keeps = |version: &str, value: &str| {
            let raw = format!("GET / {version}\r\nHost: t\r\nConnection: {value}\r\n\r\n");
            let mut spare = HeadBuffers::default();
            let (head, _) = parse_request(raw.as_bytes(), &mut HeadScan::default(), &mut spare)
                .unwrap()
                .unwrap();
            head.keep_alive
        };
        assert!(keeps("HTTP/1.0", " Keep-Alive "));
        assert!(keeps("HTTP/1.0", "foo, keep-alive"));
        assert!(!keeps("HTTP/1.0", "foo"));
        assert!(!keeps("HTTP/1.1", "CLOSE"));
        assert!(!keeps("HTTP/1.1", "keep-alive, close"));
        assert!(keeps("HTTP/1.1", "keep-alive,,"));
    }
}
