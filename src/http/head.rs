//! Message heads: a request head found in received bytes, parsed (httparse
//! does the syntax) and checked into a `RequestHead`, and how a message's
//! body is framed (RFC 9112 section 6.3), in one function for the server's
//! requests and the load generator's responses alike.

use std::mem::MaybeUninit;
use std::ops::Range;

use super::chunked::is_tchar;
use super::error::ProtoError;
use super::limits::{MAX_HEADERS, MAX_HEADER_BYTES, MAX_REQUEST_LINE};
use super::request::{BodyLength, HeadBuffers, Method, RequestHead, Version};

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
/// buffers (taken only when the head is complete).
pub(crate) fn parse_request(
    data: &[u8],
    scan: &mut HeadScan,
    spare: &mut HeadBuffers,
) -> Result<Option<(RequestHead, usize)>, ProtoError> {
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
    let Some((req_n, build)) = parse_head_with(data, |req, n| build_request(data, req, n, spare))?
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

/// Iterates the comma-separated, trimmed, non-empty elements of a list field.
fn list_items(v: &[u8]) -> impl Iterator<Item = &[u8]> {
    v.split(|&b| b == b',')
        .map(|s| s.trim_ascii())
        .filter(|s| !s.is_empty())
}

/// Checks a parsed request's fields and keeps its first `n` bytes as the
/// head, with every field a range into them.
fn build_request(
    data: &[u8],
    req: &httparse::Request<'_, '_>,
    n: usize,
    spare: &mut HeadBuffers,
) -> Result<RequestHead, ProtoError> {
    let raw_method = req.method.unwrap_or("");
    // CONNECT is not a Method: a server that is not a proxy implements
    // none, and answering here comes before its authority-form target
    // would be judged as a malformed path.
    let method = Method::from_bytes(raw_method.as_bytes())
        .ok_or(ProtoError::new(501, "method not implemented"))?;
    let version = match req.version {
        Some(0) => Version::Http10,
        _ => Version::Http11,
    };
    let target_str = req.path.unwrap_or("");
    // `*` is the asterisk-form, for OPTIONS only (RFC 9112 3.2.4); a
    // fragment is never sent (RFC 9112 3.2): both are malformed targets.
    if (target_str == "*" && method != Method::Options) || target_str.contains('#') {
        return Err(ProtoError::bad_request("invalid request target"));
    }
    let target = offset(data, target_str.as_bytes());
    let (path, query) = split_target(target_str, target.start)?;

    let (mut raw, mut headers) = std::mem::take(spare); // both empty
    let mut hosts = 0;
    let mut framing = FramingFields::default();
    let (mut close, mut ka, mut expect, mut pre) = (false, false, false, false);
    for h in req.headers.iter() {
        headers.push((offset(data, h.name.as_bytes()), offset(data, h.value)));
        let name = h.name.as_bytes();
        pre |= name.len() > 2 && name[..3].eq_ignore_ascii_case(b"if-");
        if framing.add(name, h.value)? {
            continue;
        }
        if name.eq_ignore_ascii_case(b"host") {
            hosts += 1;
            if !valid_host(h.value) {
                return Err(ProtoError::bad_request("invalid Host"));
            }
        } else if name.eq_ignore_ascii_case(b"connection") {
            for t in list_items(h.value) {
                close |= t.eq_ignore_ascii_case(b"close");
                ka |= t.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case(b"expect") {
            expect |= h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
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
    })
}

/// A Host field value is `uri-host [ ":" port ]` (RFC 9110 7.2): an IP
/// literal in brackets, or a name of unreserved, percent-encoded and
/// sub-delimiter characters (RFC 3986 3.2.2). Empty is allowed (RFC 9112
/// 3.2: a target without an authority). Userinfo (`u@host`) and a path
/// (`a/b`) are not.
fn valid_host(v: &[u8]) -> bool {
    let v = v.trim_ascii();
    let (host, port) = match v.strip_prefix(b"[") {
        Some(rest) => match rest.iter().position(|&b| b == b']') {
            Some(end) => {
                let literal = &rest[..end];
                let ok = !literal.is_empty()
                    && literal
                        .iter()
                        .all(|&b| b.is_ascii_hexdigit() || b == b':' || b == b'.' || b == b'v');
                if !ok {
                    return false;
                }
                (&b""[..], &rest[end + 1..])
            }
            None => return false,
        },
        None => match v.iter().rposition(|&b| b == b':') {
            Some(i) => (&v[..i], &v[i..]),
            None => (v, &b""[..]),
        },
    };
    let port_ok = port.is_empty() || (port[0] == b':' && port[1..].iter().all(u8::is_ascii_digit));
    let name_ok = host
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=".contains(&b));
    port_ok && name_ok
}

/// Splits a target into path and query ranges (offsets relative to `base`).
/// Absolute-form targets lose their scheme and authority.
fn split_target(t: &str, base: usize) -> Result<(Range<usize>, Option<Range<usize>>), ProtoError> {
    let lower_starts = |p: &str| t.len() >= p.len() && t[..p.len()].eq_ignore_ascii_case(p);
    let path_start = if t.starts_with('/') || t == "*" {
        0
    } else if lower_starts("http://") || lower_starts("https://") {
        let after = t.find("://").map(|i| i + 3).unwrap_or(0);
        let rest = &t[after..];
        after + rest.find(['/', '?']).unwrap_or(rest.len())
    } else {
        return Err(ProtoError::bad_request("invalid request target"));
    };
    let q = t[path_start..].find('?').map(|i| path_start + i);
    let path_end = q.unwrap_or(t.len());
    let query = q.map(|i| base + i + 1..base + t.len());
    Ok((base + path_start..base + path_end, query))
}

// ------------------------------------------------------------ body framing

/// Which message a body belongs to: RFC 9112 section 6.3 frames requests
/// and responses differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Message {
    Request(Version),
    /// A response and whether it answers a HEAD request.
    Response {
        status: u16,
        to_head: bool,
    },
}

/// How a message body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body: the message ends with its head.
    None,
    Length(u64),
    Chunked,
    /// The body runs until the server closes the connection (responses).
    UntilClose,
}

/// The fields that frame a body, gathered while a head's fields are read.
/// Their values are checked as they arrive, so a malformed one is refused
/// in the order the fields came (RFC 9110 8.6, RFC 9112 6.1).
#[derive(Debug, Default)]
pub(crate) struct FramingFields<'a> {
    /// The Content-Length, the same in every field line and list element.
    content_length: Option<u64>,
    /// The transfer codings of every Transfer-Encoding line, in order.
    codings: Vec<&'a [u8]>,
}

impl<'a> FramingFields<'a> {
    /// Takes in one header field: true if it was a framing field.
    pub(crate) fn add(&mut self, name: &[u8], value: &'a [u8]) -> Result<bool, ProtoError> {
        if name.eq_ignore_ascii_case(b"content-length") {
            for item in value.split(|&b| b == b',').map(|s| s.trim_ascii()) {
                let v = parse_content_length(item)?;
                if self.content_length.is_some_and(|c| c != v) {
                    return Err(ProtoError::bad_request("conflicting Content-Length"));
                }
                self.content_length = Some(v);
            }
            Ok(true)
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            let before = self.codings.len();
            self.codings.extend(list_items(value));
            if self.codings.len() == before {
                return Err(ProtoError::bad_request("empty Transfer-Encoding"));
            }
            Ok(true)
        } else {
            Ok(false)
        }
    }
}

/// How the body of `message` is framed, following RFC 9112 section 6.3
/// step by step (step 2, a tunnel after a 2xx to CONNECT, never arises:
/// the server answers CONNECT with 501 and the load generator never sends
/// it).
pub(crate) fn body_framing(
    message: Message,
    fields: &FramingFields<'_>,
) -> Result<Framing, ProtoError> {
    // 1. A response to HEAD, and every 1xx, 204 and 304, ends with its
    //    head, whatever its fields say.
    if let Message::Response { status, to_head } = message {
        if to_head || (100..200).contains(&status) || status == 204 || status == 304 {
            return Ok(Framing::None);
        }
    }
    let chunked = |t: &[u8]| t.eq_ignore_ascii_case(b"chunked");
    if let Some(last) = fields.codings.last() {
        match message {
            // 4. A response with chunked last is chunked, else it runs
            //    until the connection closes; 3. either way, Transfer-
            //    Encoding overrides any Content-Length.
            Message::Response { .. } if chunked(last) => return Ok(Framing::Chunked),
            Message::Response { .. } => return Ok(Framing::UntilClose),
            // RFC 9112 6.1: Transfer-Encoding in an HTTP/1.0 message
            // means faulty framing.
            Message::Request(Version::Http10) => {
                return Err(ProtoError::bad_request("Transfer-Encoding in HTTP/1.0"))
            }
            // 3. Both fields in a request may be an attempt at request
            //    smuggling: refused, and the connection closes (as after
            //    every error).
            Message::Request(_) if fields.content_length.is_some() => {
                return Err(ProtoError::bad_request(
                    "Content-Length with Transfer-Encoding",
                ))
            }
            // 4. A request is chunked, with chunked last and only there;
            //    anything else cannot be framed: 400, or 501 for codings
            //    this server does not decode (RFC 9112 6.1).
            Message::Request(_) => {
                check_request_codings(&fields.codings)?;
                return Ok(Framing::Chunked);
            }
        }
    }
    // 5. An invalid Content-Length was refused when its field was read;
    //    6. a valid one gives the length.
    if let Some(n) = fields.content_length {
        return Ok(Framing::Length(n));
    }
    match message {
        // 7. A request with neither field has no body.
        Message::Request(_) => Ok(Framing::None),
        // 8. A response with neither runs until the connection closes.
        Message::Response { .. } => Ok(Framing::UntilClose),
    }
}

fn parse_content_length(v: &[u8]) -> Result<u64, ProtoError> {
    let bad = ProtoError::bad_request("invalid Content-Length");
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return Err(bad);
    }
    v.iter().try_fold(0u64, |acc, &d| {
        acc.checked_mul(10)
            .and_then(|a| a.checked_add((d - b'0') as u64))
            .ok_or(bad)
    })
}

/// A request's transfer codings: chunked, once and last, and nothing else
/// (codings known by name but not decoded are 501, like unknown ones).
fn check_request_codings(te: &[&[u8]]) -> Result<(), ProtoError> {
    const KNOWN: [&[u8]; 6] = [
        b"chunked",
        b"gzip",
        b"x-gzip",
        b"deflate",
        b"compress",
        b"x-compress",
    ];
    for t in te {
        let name = t.split(|&b| b == b';').next().unwrap_or(b"").trim_ascii();
        if !name.iter().all(|&b| is_tchar(b)) {
            return Err(ProtoError::bad_request("malformed transfer coding"));
        }
        if !KNOWN.iter().any(|k| name.eq_ignore_ascii_case(k)) {
            return Err(ProtoError::new(501, "unknown transfer coding"));
        }
    }
    let chunked = |t: &[u8]| t.eq_ignore_ascii_case(b"chunked");
    let last_chunked = te.last().is_some_and(|t| chunked(t));
    if !last_chunked || te.iter().filter(|t| chunked(t)).count() > 1 {
        return Err(ProtoError::bad_request(
            "chunked is not the final transfer coding",
        ));
    }
    if te.len() > 1 {
        return Err(ProtoError::new(501, "transfer coding not supported"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The framing of a message with these header fields.
    fn frame(message: Message, fields: &[(&str, &str)]) -> Result<Framing, u16> {
        let mut f = FramingFields::default();
        for (name, value) in fields {
            f.add(name.as_bytes(), value.as_bytes())
                .map_err(|e| e.status)?;
        }
        body_framing(message, &f).map_err(|e| e.status)
    }

    const REQ: Message = Message::Request(Version::Http11);
    const OK: Message = Message::Response {
        status: 200,
        to_head: false,
    };

    #[test]
    fn step_1_bodiless_responses_ignore_their_fields() {
        let te = [("Transfer-Encoding", "chunked")];
        let head = Message::Response {
            status: 200,
            to_head: true,
        };
        assert_eq!(frame(head, &[("Content-Length", "5")]), Ok(Framing::None));
        for status in [100, 101, 204, 304] {
            let m = Message::Response {
                status,
                to_head: false,
            };
            assert_eq!(frame(m, &te), Ok(Framing::None), "{status}");
        }
    }

    #[test]
    fn steps_3_and_4_transfer_encoding_overrides_or_is_refused() {
        let both = [("Content-Length", "5"), ("Transfer-Encoding", "chunked")];
        assert_eq!(frame(OK, &both), Ok(Framing::Chunked));
        assert_eq!(frame(REQ, &both), Err(400));
        let gzip = [("Transfer-Encoding", "gzip"), ("Content-Length", "5")];
        assert_eq!(frame(OK, &gzip), Ok(Framing::UntilClose));
        let lines = [
            ("Transfer-Encoding", "gzip"),
            ("Transfer-Encoding", "chunked"),
        ];
        assert_eq!(frame(OK, &lines), Ok(Framing::Chunked));
        assert_eq!(frame(REQ, &lines), Err(501));
        assert_eq!(
            frame(REQ, &[("Transfer-Encoding", "chunked")]),
            Ok(Framing::Chunked)
        );
        assert_eq!(frame(REQ, &[("Transfer-Encoding", "gzip")]), Err(400));
        assert_eq!(
            frame(REQ, &[("Transfer-Encoding", "chunked, chunked")]),
            Err(400)
        );
        assert_eq!(frame(REQ, &[("Transfer-Encoding", "br")]), Err(501));
        assert_eq!(frame(REQ, &[("Transfer-Encoding", " , ")]), Err(400));
        let http10 = Message::Request(Version::Http10);
        assert_eq!(frame(http10, &[("Transfer-Encoding", "chunked")]), Err(400));
    }

    #[test]
    fn steps_5_and_6_content_length_is_checked_then_used() {
        for bad in ["", "+5", "-1", "5 5", "0x5", "99999999999999999999"] {
            assert_eq!(frame(REQ, &[("Content-Length", bad)]), Err(400), "{bad:?}");
            assert_eq!(frame(OK, &[("Content-Length", bad)]), Err(400), "{bad:?}");
        }
        let same = [("Content-Length", "5, 5"), ("Content-Length", "5")];
        assert_eq!(frame(REQ, &same), Ok(Framing::Length(5)));
        let differ = [("Content-Length", "5"), ("Content-Length", "6")];
        assert_eq!(frame(OK, &differ), Err(400));
        assert_eq!(
            frame(OK, &[("Content-Length", "0")]),
            Ok(Framing::Length(0))
        );
    }

    #[test]
    fn steps_7_and_8_neither_field() {
        assert_eq!(frame(REQ, &[("Host", "x")]), Ok(Framing::None));
        assert_eq!(frame(OK, &[("Server", "x")]), Ok(Framing::UntilClose));
    }
}
