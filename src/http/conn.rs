//! The server side of one HTTP/1.1 connection as a state machine.
//!
//! Every transition lives here: what a request means (framing, keep-alive,
//! limits) and what the response head must say follows from this state, so
//! the concurrency models only move bytes.

use std::mem::MaybeUninit;
use std::ops::Range;

use super::chunked::{is_tchar, ChunkStep, ChunkedDecoder};
use super::error::ProtoError;
use super::limits::*;
use super::request::{BodyLength, Method, RequestHead, Version};
use super::response::{encode_head, status_has_no_body};

/// What the connection has to say next.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A complete, valid request head.
    Head(RequestHead),
    /// A piece of the current request's body (chunked framing removed).
    Data(&'a [u8]),
    /// The current request's body is complete.
    End,
    /// Nothing more can be decoded from the bytes received so far.
    NeedData,
    /// The current request must be answered before the next is decoded.
    Paused,
    /// The request is malformed; answer with `write_error` and close.
    Error(ProtoError),
    /// The connection is finished; close it once output is flushed.
    Closed,
}

/// Where the connection is, for choosing which timeout applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Between requests with nothing buffered: the idle keep-alive timeout.
    Idle,
    /// Part of a request head has arrived: the header timeout.
    Head,
    /// Reading a request body: the body timeout.
    Body,
    /// The request is read and waits for its response: no read timeout.
    Respond,
    Closed,
}

#[derive(Debug)]
enum BodyState {
    Length { total: u64, remaining: u64 },
    Chunked(ChunkedDecoder),
}

#[derive(Debug)]
enum State {
    Idle,
    Body(BodyState),
    Respond,
    Closed,
}

#[derive(Debug)]
pub struct ServerConn {
    /// Storage for received bytes; `buf[start..end]` is not yet decoded.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// How far the search for the end of a request head has got, so a head
    /// trickling in byte by byte is not rescanned from its start each time.
    scanned: usize,
    state: State,
    limits: Limits,
    max_body: u64,
    body_read: u64,
    keep_alive: bool,
    version: Version,
    eof: bool,
    /// The connection ends with request bytes unread (an error, or a
    /// response sent before its request body was read).
    unread: bool,
    /// The request being answered is a HEAD: its error answers carry no
    /// body either (RFC 9110 9.3.2).
    head_request: bool,
}

impl ServerConn {
    pub fn new(limits: Limits) -> Self {
        ServerConn {
            buf: Vec::new(),
            start: 0,
            end: 0,
            scanned: 0,
            state: State::Idle,
            max_body: limits.max_body,
            limits,
            body_read: 0,
            keep_alive: false,
            version: Version::Http11,
            eof: false,
            unread: false,
            head_request: false,
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Appends received bytes. Convenience for tests and small inputs; the
    /// models read straight into `read_buf` instead.
    pub fn feed(&mut self, data: &[u8]) {
        self.compact();
        // Only as much room as the data needs: a connection fed from a
        // shared read buffer keeps a buffer the size of its requests.
        self.buf.truncate(self.end);
        self.buf.extend_from_slice(data);
        self.end += data.len();
    }

    /// Between requests with nothing buffered: the next bytes start a new
    /// request head, so a server may read them into a buffer it shares
    /// between connections and `feed` them, instead of giving every idle
    /// connection a read buffer of its own (E3 holds 10,000 of them).
    pub fn is_between_requests(&self) -> bool {
        matches!(self.state, State::Idle) && self.start == self.end && !self.eof
    }

    /// The peer will send nothing more.
    pub fn feed_eof(&mut self) {
        self.eof = true;
    }

    pub fn is_eof(&self) -> bool {
        self.eof
    }

    /// Whether reading more bytes now can make progress. False while a
    /// response is owed (pipelined requests wait in the kernel's buffer,
    /// which is the backpressure) and once the connection is finished.
    pub fn wants_read(&self) -> bool {
        !self.eof && matches!(self.state, State::Idle | State::Body(_))
    }

    /// Free space to read into, grown within the limits for the current
    /// state; empty when nothing more may be buffered.
    pub fn read_buf(&mut self) -> &mut [u8] {
        self.compact();
        // A body that is consumed as fast as it arrives never fills the
        // buffer, so it would be read 4 KiB at a time; grow while more body
        // is due than the buffer holds (uploads: ~8x fewer reads).
        let streaming = self.end == 0
            && self.buf.len() < MAX_READ_BUFFER
            && match &self.state {
                State::Body(BodyState::Length { remaining, .. }) => {
                    *remaining > self.buf.len() as u64
                }
                State::Body(BodyState::Chunked(_)) => true,
                _ => false,
            };
        if self.end == self.buf.len() || streaming {
            let max = match self.state {
                State::Body(_) => MAX_READ_BUFFER,
                _ => MAX_REQUEST_LINE + MAX_HEADER_BYTES + 1024,
            };
            let want = (self.buf.len() * 2).clamp(INITIAL_READ_BUFFER, max);
            if want > self.buf.len() {
                self.buf.resize(want, 0);
            }
        }
        &mut self.buf[self.end..]
    }

    /// Records that `n` bytes were written into `read_buf`.
    pub fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    fn compact(&mut self) {
        if self.start == self.end {
            self.scanned = self.scanned.saturating_sub(self.start);
            self.start = 0;
            self.end = 0;
            // Give back a buffer grown for a large body once it is drained.
            if self.buf.len() > 4 * INITIAL_READ_BUFFER && matches!(self.state, State::Idle) {
                self.buf = Vec::new();
            }
        } else if self.start > 0 && self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scanned = self.scanned.saturating_sub(self.start);
            self.start = 0;
        }
    }

    pub fn phase(&self) -> Phase {
        match self.state {
            State::Idle if self.start == self.end => Phase::Idle,
            State::Idle => Phase::Head,
            State::Body(_) => Phase::Body,
            State::Respond => Phase::Respond,
            State::Closed => Phase::Closed,
        }
    }

    /// The error to answer when the timeout of the current phase expires:
    /// 408 while a request is partly received, nothing when idle.
    pub fn timeout_error(&self) -> Option<ProtoError> {
        match self.phase() {
            Phase::Head | Phase::Body => Some(ProtoError::new(408, "request timed out")),
            _ => None,
        }
    }

    /// Overrides the body limit for the current request (a handler that
    /// streams to disk accepts more than one that buffers in memory).
    pub fn set_max_body(&mut self, max: u64) {
        self.max_body = max;
    }

    /// Decodes the next event from the bytes received so far.
    pub fn next_event(&mut self) -> Event<'_> {
        match self.state {
            State::Closed => Event::Closed,
            State::Respond => Event::Paused,
            State::Idle => match self.parse_head() {
                Ok(Some(head)) => Event::Head(head),
                Ok(None) if self.eof => {
                    self.state = State::Closed;
                    Event::Closed
                }
                Ok(None) => Event::NeedData,
                Err(e) => self.fail(e),
            },
            State::Body(_) => match self.body_step() {
                Ok(Some(r)) => Event::Data(&self.buf[r]),
                Ok(None) => match self.state {
                    State::Respond => Event::End,
                    _ if self.eof => self.fail(ProtoError::bad_request("incomplete body")),
                    _ => Event::NeedData,
                },
                Err(e) => self.fail(e),
            },
        }
    }

    fn fail<'a>(&mut self, e: ProtoError) -> Event<'a> {
        self.state = State::Closed;
        self.unread = true;
        Event::Error(e)
    }

    /// Returns the next body slice's range, or None when the body ended
    /// (state moved to Respond) or more data is needed.
    fn body_step(&mut self) -> Result<Option<Range<usize>>, ProtoError> {
        loop {
            let State::Body(body) = &mut self.state else {
                return Ok(None);
            };
            match body {
                BodyState::Length { total, remaining } => {
                    if *total > self.max_body {
                        return Err(ProtoError::new(413, "request body too large"));
                    }
                    if *remaining == 0 {
                        self.state = State::Respond;
                        return Ok(None);
                    }
                    let n = (*remaining).min((self.end - self.start) as u64) as usize;
                    if n == 0 {
                        return Ok(None);
                    }
                    *remaining -= n as u64;
                    return Ok(Some(self.take(n)));
                }
                BodyState::Chunked(dec) => match dec.step(&self.buf[self.start..self.end])? {
                    ChunkStep::Framing(n) => {
                        self.start += n;
                        // Refuse a chunk that would cross the limit when its
                        // size is read, like an oversized Content-Length:
                        // checking each piece instead would deliver a part
                        // of it first, and how much would depend on how the
                        // bytes happened to arrive.
                        if self.body_read.saturating_add(dec.chunk_remaining()) > self.max_body {
                            return Err(ProtoError::new(413, "request body too large"));
                        }
                    }
                    ChunkStep::Data(n) => {
                        if self.body_read + n as u64 > self.max_body {
                            return Err(ProtoError::new(413, "request body too large"));
                        }
                        return Ok(Some(self.take(n)));
                    }
                    ChunkStep::Done(n) => {
                        self.start += n;
                        self.state = State::Respond;
                        return Ok(None);
                    }
                    ChunkStep::NeedData => return Ok(None),
                },
            }
        }
    }

    fn take(&mut self, n: usize) -> Range<usize> {
        let r = self.start..self.start + n;
        self.start += n;
        self.body_read += n as u64;
        r
    }

    /// Parses a request head if a complete one is buffered.
    fn parse_head(&mut self) -> Result<Option<RequestHead>, ProtoError> {
        // RFC 9112 2.2: ignore empty lines before a request line.
        while self.start < self.end && matches!(self.buf[self.start], b'\r' | b'\n') {
            if self.buf[self.start] == b'\r' {
                match self
                    .buf
                    .get(self.start + 1..self.end)
                    .and_then(|r| r.first())
                {
                    Some(b'\n') => {}
                    Some(_) => return Err(ProtoError::bad_request("bare CR")),
                    // Whether this CR is bare shows only with the next
                    // byte; skipping it now would accept "\rGET" when it
                    // arrives in two reads and refuse it in one.
                    None => return Ok(None),
                }
            }
            self.start += 1;
        }
        let data = &self.buf[self.start..self.end];
        if data.is_empty() {
            return Ok(None);
        }
        self.head_request = data.starts_with(b"HEAD ");
        let line_len = match data.iter().position(|&b| b == b'\n') {
            Some(i) => i,
            None if data.len() > MAX_REQUEST_LINE + 1 => {
                return Err(ProtoError::new(414, "request line too long"))
            }
            None => return Ok(None),
        };
        let line = data[..line_len]
            .strip_suffix(b"\r")
            .unwrap_or(&data[..line_len]);
        if line.len() > MAX_REQUEST_LINE {
            return Err(ProtoError::new(414, "request line too long"));
        }
        check_version(line)?;

        let from = self
            .scanned
            .max(self.start + line_len)
            .saturating_sub(self.start);
        let Some(head_end) = find_head_end(data, from) else {
            self.scanned = self.end.saturating_sub(3);
            if data.len() - line_len > MAX_HEADER_BYTES {
                return Err(ProtoError::new(431, "header section too large"));
            }
            return Ok(None);
        };
        if head_end - line_len > MAX_HEADER_BYTES {
            return Err(ProtoError::new(431, "header section too large"));
        }

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
            Err(_) => return Err(ProtoError::bad_request("malformed request")),
        };
        let head = build_head(data, &req, n)?;
        self.start += n;
        self.scanned = self.start;
        self.max_body = self.limits.max_body;
        self.body_read = 0;
        self.keep_alive = head.keep_alive;
        self.version = head.version;
        self.state = State::Body(match head.body {
            BodyLength::Empty => BodyState::Length {
                total: 0,
                remaining: 0,
            },
            BodyLength::Length(n) => BodyState::Length {
                total: n,
                remaining: n,
            },
            BodyLength::Chunked => BodyState::Chunked(ChunkedDecoder::default()),
        });
        Ok(Some(head))
    }

    /// Writes `100 Continue` for a request that expects it, before its body.
    pub fn write_continue(&mut self, out: &mut Vec<u8>) {
        if matches!(self.state, State::Body(_)) && self.body_read == 0 {
            out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
    }

    /// Encodes the head of the response to the current request. `headers`
    /// holds extra pre-encoded header lines; `content_length` is the length
    /// of the body the response has (also for HEAD, where it is not sent).
    /// Returns whether the connection stays open for another request.
    pub fn write_head(
        &mut self,
        out: &mut Vec<u8>,
        status: u16,
        content_length: u64,
        headers: &[u8],
        close: bool,
    ) -> bool {
        // A response sent before the request body was read ends the
        // connection: the unread body would be taken for the next request.
        // A request without a body is complete as soon as its head is.
        if matches!(
            self.state,
            State::Body(BodyState::Length { remaining: 0, .. })
        ) {
            self.state = State::Respond;
        }
        let keep = self.keep_alive && !close && !self.eof && matches!(self.state, State::Respond);
        let connection = match (keep, self.version) {
            (false, _) => Some("close"),
            (true, Version::Http10) => Some("keep-alive"),
            (true, Version::Http11) => None,
        };
        let len = (!status_has_no_body(status)).then_some(content_length);
        encode_head(out, status, len, connection, headers);
        if !keep && (matches!(self.state, State::Body(_)) || self.start < self.end) {
            self.unread = true;
        }
        self.state = if keep { State::Idle } else { State::Closed };
        keep
    }

    /// Whether closing should first read what the peer is still sending:
    /// closing a socket with unread data makes the kernel send RST, which
    /// can destroy the error response before the client reads it.
    pub fn should_linger(&self) -> bool {
        self.unread && !self.eof
    }

    /// Answers a protocol error with a short text body and closes.
    pub fn write_error(&mut self, out: &mut Vec<u8>, err: &ProtoError) {
        let body = format!("{} {}\n", err.status, err.reason);
        self.state = State::Closed;
        self.write_head(
            out,
            err.status,
            body.len() as u64,
            b"Content-Type: text/plain; charset=utf-8\r\n",
            true,
        );
        if !self.head_request {
            out.extend_from_slice(body.as_bytes());
        }
    }
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

/// 505 for a well-formed version other than 1.0 or 1.1 (HTTP/2.0, HTTP/1.2);
/// malformed versions are left to the parser (400).
fn check_version(line: &[u8]) -> Result<(), ProtoError> {
    let Some(sp) = line.iter().rposition(|&b| b == b' ') else {
        return Ok(());
    };
    match &line[sp + 1..] {
        b"HTTP/1.1" | b"HTTP/1.0" => Ok(()),
        [b'H', b'T', b'T', b'P', b'/', d1, b'.', d2]
            if d1.is_ascii_digit() && d2.is_ascii_digit() =>
        {
            Err(ProtoError::new(505, "HTTP version not supported"))
        }
        [b'H', b'T', b'T', b'P', b'/', d] if d.is_ascii_digit() => {
            Err(ProtoError::new(505, "HTTP version not supported"))
        }
        _ => Ok(()),
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

fn build_head(
    data: &[u8],
    req: &httparse::Request<'_, '_>,
    n: usize,
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
    let target = offset(data, target_str.as_bytes());
    let (path, query) = split_target(target_str, target.start)?;

    let mut headers = Vec::with_capacity(req.headers.len());
    let mut hosts = 0;
    let mut content_length: Option<u64> = None;
    let mut te: Vec<&[u8]> = Vec::new();
    let (mut close, mut ka, mut expect) = (false, false, false);
    for h in req.headers.iter() {
        headers.push((offset(data, h.name.as_bytes()), offset(data, h.value)));
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"host") {
            hosts += 1;
        } else if name.eq_ignore_ascii_case(b"content-length") {
            for item in h.value.split(|&b| b == b',').map(|s| s.trim_ascii()) {
                let v = parse_content_length(item)?;
                if content_length.is_some_and(|c| c != v) {
                    return Err(ProtoError::bad_request("conflicting Content-Length"));
                }
                content_length = Some(v);
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            te.extend(list_items(h.value));
            if list_items(h.value).next().is_none() {
                return Err(ProtoError::bad_request("empty Transfer-Encoding"));
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
    let body = if !te.is_empty() {
        if version == Version::Http10 {
            return Err(ProtoError::bad_request("Transfer-Encoding in HTTP/1.0"));
        }
        if content_length.is_some() {
            return Err(ProtoError::bad_request(
                "Content-Length with Transfer-Encoding",
            ));
        }
        transfer_coding(&te)?
    } else {
        match content_length {
            None | Some(0) => BodyLength::Empty,
            Some(n) => BodyLength::Length(n),
        }
    };
    let keep_alive = !close && (version == Version::Http11 || ka);
    Ok(RequestHead::new(
        data[..n].to_vec(),
        method,
        version,
        target,
        path,
        query,
        headers,
        keep_alive,
        body,
        expect && version == Version::Http11,
    ))
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

/// Codings we know by name but do not decode: 501, like unknown ones.
fn transfer_coding(te: &[&[u8]]) -> Result<BodyLength, ProtoError> {
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
    Ok(BodyLength::Chunked)
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
