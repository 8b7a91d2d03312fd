//! The client side: an incremental response parser for the load generator.
//! It frames responses (Content-Length, chunked, close-delimited, HEAD, 1xx,
//! 204/304) and counts bytes; it never keeps a body.

use std::mem::MaybeUninit;

use super::chunked::{ChunkStep, ChunkedDecoder};
use super::framing::{body_framing, Framing as BodyFraming, FramingFields, Message};
use super::limits::{MAX_HEADER_BYTES, MAX_RESPONSE_HEADERS};

/// What a completed response looked like.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResponseInfo {
    pub status: u16,
    /// Bytes of the final response's head (interim 1xx heads included).
    pub head_bytes: u64,
    /// Body bytes after transfer decoding.
    pub body_bytes: u64,
    /// Bytes on the wire for the body (chunk framing included).
    pub wire_body_bytes: u64,
    /// The connection may carry another request.
    pub keep_alive: bool,
    /// The `Server` header, when asked for with `capture_server`.
    pub server: Option<String>,
    /// Rules the head broke that leave its framing known ([`HeadFlaws`]).
    pub flaws: HeadFlaws,
    /// The first flawed head this parser saw, escaped and cut
    /// ([`flaw_example`]); taken by the caller with the response.
    pub flaw_example: Option<String>,
}

/// Rules a response head broke without leaving its framing in doubt: the
/// response still counts as answered, and the load generator counts each
/// as a violation (RFC 9112 section 2.2, RFC 9110 section 6.6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeadFlaws(u8);

impl HeadFlaws {
    /// A line of the head ends in LF without CR.
    pub const BARE_LF: HeadFlaws = HeadFlaws(1);
    /// A `Date` field that is not an IMF-fixdate, the one form a sender
    /// may generate.
    pub const BAD_DATE: HeadFlaws = HeadFlaws(2);

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn contains(self, f: HeadFlaws) -> bool {
        self.0 & f.0 == f.0 && f.0 != 0
    }

    fn add(&mut self, f: HeadFlaws) {
        self.0 |= f.0;
    }
}

/// At most this many bytes of a violation's example are kept.
pub const EXAMPLE_BYTES: usize = 200;

/// `bytes` as printable ASCII (`\r`, `\n`, `\xNN`), cut to
/// [`EXAMPLE_BYTES`] of input with `...` when longer.
pub fn flaw_example(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(EXAMPLE_BYTES)];
    let mut out: String = cut.escape_ascii().to_string();
    if bytes.len() > cut.len() {
        out.push_str("...");
    }
    out
}

/// Whether a `Date` value is an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37
/// GMT`): the two obsolete forms parse, but a sender must not send them.
pub fn is_imf_fixdate(v: &[u8]) -> bool {
    v.len() == 29
        && v.ends_with(b" GMT")
        && std::str::from_utf8(v).is_ok_and(|t| httpdate::parse_http_date(t).is_ok())
}

/// Whether some line of `head` ends in a bare LF.
fn has_bare_lf(head: &[u8]) -> bool {
    head.iter()
        .enumerate()
        .any(|(i, &b)| b == b'\n' && (i == 0 || head[i - 1] != b'\r'))
}

/// Why a response could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ResponseError {
    #[error("malformed response head")]
    BadHead,
    /// Over [`MAX_HEADER_BYTES`] or [`MAX_RESPONSE_HEADERS`] fields.
    #[error("response head too large")]
    HeadTooLarge,
    #[error("malformed chunked body")]
    BadChunk,
    #[error("connection closed before the response was complete")]
    Incomplete,
}

#[derive(Debug)]
enum Body {
    Length(u64),
    Chunked(ChunkedDecoder),
    UntilClose,
}

/// How a head frames what follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// A 1xx interim head: the real response follows.
    Interim,
    Length(u64),
    Chunked,
    UntilClose,
}

/// What a head says, as far as framing and counting need it.
#[derive(Debug, Clone, Copy)]
struct HeadMeaning {
    status: u16,
    keep_alive: bool,
    framing: Framing,
    flaws: HeadFlaws,
}

/// The last head parsed on this connection and what it meant. A server
/// under load sends the same head again and again (only its Date changes,
/// once a second), and equal bytes mean the same thing, so comparing
/// bytes replaces most parsing: that is where a keep-alive load
/// generator spends most of its user time.
#[derive(Debug, Default)]
struct HeadMemo {
    bytes: Vec<u8>,
    meaning: Option<HeadMeaning>,
}

impl HeadMemo {
    fn recall(&self, data: &[u8]) -> Option<HeadMeaning> {
        let m = self.meaning?;
        (data.get(..self.bytes.len()) == Some(&self.bytes[..])).then_some(m)
    }

    fn remember(&mut self, head: &[u8], meaning: HeadMeaning) {
        self.bytes.clear();
        self.bytes.extend_from_slice(head);
        self.meaning = Some(meaning);
    }
}

#[derive(Debug)]
enum State {
    Head,
    Body(Body),
}

/// Parses one response at a time; call `reset` (or keep feeding) for the
/// next one on the same connection.
#[derive(Debug)]
pub struct ResponseParser {
    state: State,
    /// A head split across reads is collected here; whole heads are parsed
    /// straight from the read buffer without copying.
    partial: Vec<u8>,
    /// Unconsumed chunk framing from the end of the previous read.
    carry: Vec<u8>,
    info: ResponseInfo,
    memo: HeadMemo,
    head_request: bool,
    capture_server: bool,
    /// `feed` returns once a final head is in (see `pause_after_head`).
    pause_after_head: bool,
    /// An example of a flawed head was handed out: one per parser is
    /// enough, and making one costs an allocation.
    example_given: bool,
}

impl ResponseParser {
    /// `head_request`: the request was HEAD, so no body follows.
    pub fn new(head_request: bool) -> Self {
        ResponseParser {
            state: State::Head,
            partial: Vec::new(),
            carry: Vec::new(),
            info: ResponseInfo::default(),
            memo: HeadMemo::default(),
            head_request,
            capture_server: false,
            pause_after_head: false,
            example_given: false,
        }
    }

    /// Record the `Server` header of the next response.
    pub fn capture_server(&mut self, yes: bool) {
        self.capture_server = yes;
    }

    /// Make `feed` return as soon as a final head is in, before any of its
    /// body: a blocking reader (`net::response`) decides from the status
    /// what to do with the body, and `in_body` says what follows.
    pub fn pause_after_head(&mut self, yes: bool) {
        self.pause_after_head = yes;
    }

    /// Once a final head is in and its body has not ended: the status and
    /// the body bytes still to come (None: chunked or until close).
    pub fn in_body(&self) -> Option<(u16, Option<u64>)> {
        match &self.state {
            State::Head => None,
            State::Body(Body::Length(n)) => Some((self.info.status, Some(*n))),
            State::Body(_) => Some((self.info.status, None)),
        }
    }

    /// Forget any partial response (a new connection starts).
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.partial.clear();
        self.carry.clear();
        self.info = ResponseInfo::default();
    }

    /// True if nothing of a response has been seen yet.
    pub fn is_idle(&self) -> bool {
        matches!(self.state, State::Head) && self.partial.is_empty() && self.info.head_bytes == 0
    }

    /// Consumes bytes from `data`. Returns how many were used and, if a
    /// response completed, its description; bytes after it are left for the
    /// next call (pipelining).
    pub fn feed(&mut self, data: &[u8]) -> Result<(usize, Option<ResponseInfo>), ResponseError> {
        self.feed_with(data, |_| {})
    }

    /// `feed`, handing the body's bytes (transfer coding removed) to
    /// `on_body` as they pass.
    pub fn feed_with(
        &mut self,
        data: &[u8],
        mut on_body: impl FnMut(&[u8]),
    ) -> Result<(usize, Option<ResponseInfo>), ResponseError> {
        let mut used = 0;
        loop {
            match &mut self.state {
                State::Head => {
                    let n = match self.parse_head(&data[used..])? {
                        Some(n) => n,
                        None => return Ok((data.len(), None)),
                    };
                    used += n;
                    if let Some(done) = self.body_or_done() {
                        return Ok((used, Some(done)));
                    }
                    if self.pause_after_head && !matches!(self.state, State::Head) {
                        return Ok((used, None));
                    }
                }
                State::Body(Body::Length(remaining)) => {
                    let n = (*remaining).min((data.len() - used) as u64);
                    on_body(&data[used..used + n as usize]);
                    *remaining -= n;
                    used += n as usize;
                    self.info.body_bytes += n;
                    self.info.wire_body_bytes += n;
                    if *remaining == 0 {
                        return Ok((used, Some(self.finish())));
                    }
                    return Ok((used, None));
                }
                State::Body(Body::Chunked(dec)) => {
                    // A chunk-size line, CRLF or trailer split across reads
                    // is carried over, because the caller reuses its buffer.
                    // Bytes count as received when taken from `data`.
                    let carried = self.carry.len();
                    if carried > 0 {
                        self.carry.extend_from_slice(&data[used..]);
                    }
                    let input: &[u8] = if carried > 0 {
                        &self.carry
                    } else {
                        &data[used..]
                    };
                    let mut off = 0;
                    let done = loop {
                        match dec
                            .step(&input[off..])
                            .map_err(|_| ResponseError::BadChunk)?
                        {
                            ChunkStep::Framing(n) => off += n,
                            ChunkStep::Data(n) => {
                                on_body(&input[off..off + n]);
                                off += n;
                                self.info.body_bytes += n as u64;
                            }
                            ChunkStep::Done(n) => break Some(off + n),
                            ChunkStep::NeedData => break None,
                        }
                    };
                    match done {
                        // The carried bytes alone could not finish a step,
                        // so the end lies in the new data.
                        Some(end) => {
                            let taken = end - carried;
                            self.info.wire_body_bytes += taken as u64;
                            self.carry.clear();
                            return Ok((used + taken, Some(self.finish())));
                        }
                        None => {
                            self.info.wire_body_bytes += (data.len() - used) as u64;
                            self.carry = input[off..].to_vec();
                            return Ok((data.len(), None));
                        }
                    }
                }
                State::Body(Body::UntilClose) => {
                    on_body(&data[used..]);
                    let n = (data.len() - used) as u64;
                    self.info.body_bytes += n;
                    self.info.wire_body_bytes += n;
                    return Ok((data.len(), None));
                }
            }
        }
    }

    /// The peer closed. A close-delimited body ends here; anything else
    /// in progress was cut short.
    pub fn feed_eof(&mut self) -> Result<Option<ResponseInfo>, ResponseError> {
        match self.state {
            State::Body(Body::UntilClose) => Ok(Some(self.finish())),
            _ if self.is_idle() => Ok(None),
            _ => Err(ResponseError::Incomplete),
        }
    }

    fn finish(&mut self) -> ResponseInfo {
        self.state = State::Head;
        std::mem::take(&mut self.info)
    }

    /// Parses a head from `data` (joined to an earlier partial head).
    /// Returns the bytes of `data` consumed when a head completed.
    fn parse_head(&mut self, data: &[u8]) -> Result<Option<usize>, ResponseError> {
        let joined = !self.partial.is_empty();
        // Capturing the Server header needs the headers themselves.
        if !joined && !self.capture_server {
            if let Some(meaning) = self.memo.recall(data) {
                let n = self.memo.bytes.len();
                self.enter(meaning, n);
                return Ok(Some(n));
            }
        }
        let old = self.partial.len();
        if joined {
            self.partial.extend_from_slice(data);
        }
        let buf: &[u8] = if joined { &self.partial } else { data };
        // Only the first MAX_HEADER_BYTES are ever parsed, so a head is
        // judged by the same bytes however reads split it: too large when
        // it has not ended by then (or has too many fields), malformed
        // only for an error within them.
        let window = &buf[..buf.len().min(MAX_HEADER_BYTES)];
        let mut slots = [const { MaybeUninit::<httparse::Header>::uninit() }; MAX_RESPONSE_HEADERS];
        let mut resp = httparse::Response::new(&mut []);
        let parsed = httparse::ParserConfig::default()
            .allow_spaces_after_header_name_in_responses(true)
            .allow_obsolete_multiline_headers_in_responses(true)
            .parse_response_with_uninit_headers(&mut resp, window, &mut slots);
        match parsed {
            Ok(httparse::Status::Complete(n)) => {
                let server = self.capture_server.then_some(&mut self.info.server);
                let mut meaning = interpret(&resp, self.head_request, server)?;
                if has_bare_lf(&buf[..n]) {
                    meaning.flaws.add(HeadFlaws::BARE_LF);
                }
                if !meaning.flaws.is_empty() && !self.example_given {
                    self.example_given = true;
                    self.info.flaw_example = Some(flaw_example(&buf[..n]));
                }
                self.memo.remember(&buf[..n], meaning);
                self.enter(meaning, n);
                self.partial.clear();
                Ok(Some(n - old))
            }
            Ok(httparse::Status::Partial) => {
                if window.len() == MAX_HEADER_BYTES {
                    return Err(ResponseError::HeadTooLarge);
                }
                if !joined {
                    self.partial.extend_from_slice(data);
                }
                Ok(None)
            }
            Err(httparse::Error::TooManyHeaders) => Err(ResponseError::HeadTooLarge),
            Err(_) => Err(ResponseError::BadHead),
        }
    }

    /// Takes in a complete head of `n` bytes that meant `m`.
    fn enter(&mut self, m: HeadMeaning, n: usize) {
        self.info.status = m.status;
        self.info.head_bytes += n as u64;
        self.info.keep_alive = m.keep_alive;
        self.info.flaws.add(m.flaws);
        self.state = match m.framing {
            Framing::Interim => State::Head,
            Framing::Length(len) => State::Body(Body::Length(len)),
            Framing::Chunked => State::Body(Body::Chunked(ChunkedDecoder::default())),
            Framing::UntilClose => State::Body(Body::UntilClose),
        };
    }

    /// After a head: a bodiless response is complete at once.
    fn body_or_done(&mut self) -> Option<ResponseInfo> {
        match self.state {
            State::Body(Body::Length(0)) => Some(self.finish()),
            _ => None,
        }
    }
}

/// Reads status, framing and persistence from a parsed head.
fn interpret(
    resp: &httparse::Response,
    head_request: bool,
    mut server: Option<&mut Option<String>>,
) -> Result<HeadMeaning, ResponseError> {
    let status = resp.code.unwrap_or(0);
    let http10 = resp.version == Some(0);
    let mut fields = FramingFields::default();
    let (mut close, mut ka) = (false, false);
    let mut flaws = HeadFlaws::default();
    for h in resp.headers.iter() {
        let name = h.name.as_bytes();
        if fields
            .add(name, h.value)
            .map_err(|_| ResponseError::BadHead)?
        {
            continue;
        }
        if name.eq_ignore_ascii_case(b"connection") {
            for t in h.value.split(|&b| b == b',').map(|t| t.trim_ascii()) {
                close |= t.eq_ignore_ascii_case(b"close");
                ka |= t.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case(b"date") {
            if !is_imf_fixdate(h.value) {
                flaws.add(HeadFlaws::BAD_DATE);
            }
        } else if name.eq_ignore_ascii_case(b"server") {
            if let Some(server) = server.as_mut() {
                **server = Some(String::from_utf8_lossy(h.value).into_owned());
            }
        }
    }
    let mut keep_alive = !close && (!http10 || ka);
    // After a 101 the connection speaks another protocol, which this
    // client does not: what follows is counted as body until the close.
    // Other 1xx responses are interim: the real one follows.
    let framing = if status == 101 {
        keep_alive = false;
        Framing::UntilClose
    } else if (100..200).contains(&status) {
        Framing::Interim
    } else {
        let message = Message::Response {
            status,
            to_head: head_request,
        };
        match body_framing(message, &fields).map_err(|_| ResponseError::BadHead)? {
            BodyFraming::None => Framing::Length(0),
            BodyFraming::Length(n) => Framing::Length(n),
            BodyFraming::Chunked => Framing::Chunked,
            BodyFraming::UntilClose => {
                keep_alive = false;
                Framing::UntilClose
            }
        }
    };
    Ok(HeadMeaning {
        status,
        keep_alive,
        framing,
        flaws,
    })
}

#[cfg(test)]
mod tests;
