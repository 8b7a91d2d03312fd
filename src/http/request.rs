//! A parsed, validated request head.

use std::ops::Range;

/// Methods the server knows by name. Anything else (including lowercase
/// spellings, since methods are case-sensitive) is answered with 501.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Delete,
    Options,
    Patch,
    Trace,
}

impl Method {
    pub fn from_bytes(b: &[u8]) -> Option<Method> {
        Some(match b {
            b"GET" => Method::Get,
            b"HEAD" => Method::Head,
            b"POST" => Method::Post,
            b"PUT" => Method::Put,
            b"DELETE" => Method::Delete,
            b"OPTIONS" => Method::Options,
            b"PATCH" => Method::Patch,
            b"TRACE" => Method::Trace,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Patch => "PATCH",
            Method::Trace => "TRACE",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

/// How the request body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyLength {
    /// No body (no Content-Length and no Transfer-Encoding, or length 0).
    Empty,
    Length(u64),
    Chunked,
}

/// A request head's two buffers (its bytes, its field ranges), handed back
/// by `RequestHead::into_buffers` so the next head on the connection
/// reuses them instead of allocating.
pub(crate) type HeadBuffers = (Vec<u8>, Vec<(Range<usize>, Range<usize>)>);

/// A request head. The raw head bytes are kept in one buffer and fields are
/// ranges into it: two buffers per head, not one per field, and those
/// reused from the connection's last head (`ServerConn::recycle`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    /// The head's bytes; the ranges below index into them. Built by
    /// `head::parse_request` with a struct literal (hence `pub(super)`).
    pub(super) raw: Vec<u8>,
    pub method: Method,
    pub version: Version,
    pub(super) target: Range<usize>,
    pub(super) path: Range<usize>,
    pub(super) query: Option<Range<usize>>,
    pub(super) headers: Vec<(Range<usize>, Range<usize>)>,
    /// The client wants the connection kept open after this exchange.
    pub keep_alive: bool,
    pub body: BodyLength,
    /// The client sent `Expect: 100-continue` and waits before sending the body.
    pub expect_continue: bool,
    /// Some field's name starts with `If-` (a precondition, RFC 9110 13.1).
    /// Recorded in the one pass over the fields so that the static-file
    /// route, on a request with none, skips four lookups by name (each a
    /// scan of every field).
    pub(super) has_preconditions: bool,
    /// A Range field was sent: without one, the static-file route skips
    /// its lookups of Range and If-Range.
    pub(super) has_range: bool,
}

impl RequestHead {
    fn text(&self, r: &Range<usize>) -> &str {
        // Targets and header names were checked to be ASCII tokens/URI chars
        // by httparse, so this cannot fail; an empty string is a safe answer.
        std::str::from_utf8(&self.raw[r.clone()]).unwrap_or("")
    }

    /// How many bytes the head took on the wire.
    pub fn wire_len(&self) -> u64 {
        self.raw.len() as u64
    }

    /// The text of the target or a part of it (`target`, `path`, `query`).
    fn target_text(&self, r: &Range<usize>) -> &str {
        let bytes = &self.raw[r.clone()];
        debug_assert!(std::str::from_utf8(bytes).is_ok());
        // SAFETY: `target` is where a parser found the target: httparse
        // returns it as a `&str` (it checks the bytes are UTF-8), and
        // `plain_head` takes only visible ASCII (`ascii_run`); `path` and
        // `query` are parts of it cut next to ASCII bytes (`/`, `?`, `://`),
        // so on character boundaries. `raw` is a copy of those bytes and
        // is never changed, so checking again would find nothing.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    /// The request target exactly as sent.
    pub fn target(&self) -> &str {
        self.target_text(&self.target)
    }

    /// The path of the target, still percent-encoded; for absolute-form
    /// targets the scheme and authority are removed.
    pub fn path(&self) -> &str {
        if self.path.is_empty() {
            "/"
        } else {
            self.target_text(&self.path)
        }
    }

    /// The query string (without `?`), if any, still percent-encoded.
    pub fn query(&self) -> Option<&str> {
        self.query.as_ref().map(|q| self.target_text(q))
    }

    /// The first value of a header (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| self.raw[n.clone()].eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| &self.raw[v.clone()])
    }

    /// The first value of a header as text, if it is valid UTF-8.
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.header(name).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// All headers in order, as (name, value) pairs.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> + '_ {
        self.headers
            .iter()
            .map(move |(n, v)| (self.text(n), &self.raw[v.clone()]))
    }

    /// Its buffers, emptied, for the next head to reuse.
    pub(crate) fn into_buffers(mut self) -> HeadBuffers {
        self.raw.clear();
        self.headers.clear();
        (self.raw, self.headers)
    }

    /// Whether any field may be a precondition (its name starts with
    /// `If-`): when false, every `If-*` lookup would find nothing.
    pub fn has_preconditions(&self) -> bool {
        self.has_preconditions
    }

    /// Whether a Range field was sent (`header("range")` would find one).
    pub fn has_range(&self) -> bool {
        self.has_range
    }

    pub fn is_head(&self) -> bool {
        self.method == Method::Head
    }
}
