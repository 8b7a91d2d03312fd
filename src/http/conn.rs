//! The server side of one HTTP/1.1 connection as a state machine: its
//! state and its receive buffer.
//!
//! Every transition lives here: what a request means (framing, keep-alive,
//! limits) and what the response head must say follows from this state, so
//! the concurrency models only move bytes. Reading a head and framing its
//! body are `head`'s.

use std::ops::Range;
use std::sync::Arc;

use super::chunked::{ChunkStep, ChunkedDecoder};
use super::error::ProtoError;
use super::head::{self, HeadScan};
use super::limits::{Limits, INITIAL_READ_BUFFER, MAX_HEAD_BUFFER, MAX_READ_BUFFER};
use super::request::{BodyLength, HeadBuffers, RequestHead, Version};
use super::response::{encode_head, status_has_no_body};

mod warm;
pub use warm::Warm;

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

/// A response whose head went out while its request's body was still being
/// read (`/echo` streams the body back): how its body is framed and whether
/// the connection may be kept after it.
#[derive(Debug, Clone, Copy)]
struct Streamed {
    chunked: bool,
    keep: bool,
}

#[derive(Debug)]
enum State {
    Idle,
    Body(BodyState),
    Respond,
    Closed,
}

/// Largest head whose buffers `recycle` keeps for the next one: a
/// connection waiting between requests holds no more than this for them.
const MAX_SPARE_HEAD: usize = 4096;

#[derive(Debug)]
pub struct ServerConn {
    /// Storage for received bytes; `buf[start..end]` is not yet decoded.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// How far the search through the request head at `start` has got.
    scan: HeadScan,
    /// The last head's buffers, handed back by `recycle`: a keep-alive
    /// request then allocates nothing for its head.
    spare: HeadBuffers,
    state: State,
    /// Shared by every connection of a server: a copy in each would be a
    /// sizeable part of a small connection's memory.
    limits: Arc<Limits>,
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
    /// The response to the request being read has started (see
    /// `write_streaming_head`): no other answer can be given to it.
    streamed: Option<Streamed>,
}

/// Encodes one piece of a streamed response body (see
/// `ServerConn::write_streaming_head`): as it is, or as one chunk.
pub fn encode_streamed(out: &mut Vec<u8>, piece: &[u8], chunked: bool) {
    if piece.is_empty() {
        // An empty chunk would end a chunked body early.
        return;
    }
    if chunked {
        out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        out.extend_from_slice(piece);
        out.extend_from_slice(b"\r\n");
    } else {
        out.extend_from_slice(piece);
    }
}

impl ServerConn {
    pub fn new(limits: impl Into<Arc<Limits>>) -> Self {
        let limits = limits.into();
        ServerConn {
            buf: Vec::new(),
            start: 0,
            end: 0,
            scan: HeadScan::default(),
            spare: HeadBuffers::default(),
            state: State::Idle,
            max_body: limits.max_body,
            limits,
            body_read: 0,
            keep_alive: false,
            version: Version::Http11,
            eof: false,
            unread: false,
            head_request: false,
            streamed: None,
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
        // is due than the buffer holds, so an upload takes fewer reads.
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
                _ => MAX_HEAD_BUFFER,
            };
            let want = (self.buf.len() * 2).clamp(INITIAL_READ_BUFFER, max);
            if want > self.buf.len() {
                self.buf.resize(want, 0);
            }
        }
        &mut self.buf[self.end..]
    }

    /// Bytes received and not yet decoded.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Records that `n` bytes were written into `read_buf`.
    pub fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    fn compact(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            // Give back a buffer grown for a large body once it is drained.
            if self.buf.len() > 4 * INITIAL_READ_BUFFER && matches!(self.state, State::Idle) {
                self.buf = Vec::new();
            }
        } else if self.start > 0 && self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
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
    /// 408 while a request is partly received, nothing when idle or when
    /// its response has already started.
    pub fn timeout_error(&self) -> Option<ProtoError> {
        if self.streamed.is_some() {
            return None;
        }
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
        // The scan counts from `start`, which stays put until the head is
        // taken: empty lines are skipped only before its first byte.
        let Some((head, n)) = head::parse_request(data, &mut self.scan, &mut self.spare)? else {
            return Ok(None);
        };
        self.start += n;
        self.scan = HeadScan::default();
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

    /// Exchanges the connection's spare head buffers with `warm`'s, and its
    /// receive buffer too when that holds no bytes. Called once before a
    /// worker feeds the connection and once after it has processed what
    /// was fed: each call undoes the other, except that a connection left
    /// holding bytes (part of a request, or a body) keeps the buffer they
    /// are in, and the worker takes the connection's in exchange. A
    /// connection served this way between requests holds no buffers of
    /// its own at all.
    pub fn swap_warm(&mut self, warm: &mut Warm) {
        std::mem::swap(&mut self.spare, &mut warm.head);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            std::mem::swap(&mut self.buf, &mut warm.buf);
        }
    }

    /// Takes back a head the caller is done with, so that the next one
    /// reuses its buffers.
    /// Only a keep-alive head's: a connection that closes after its answer
    /// would hold them for nothing.
    pub fn recycle(&mut self, head: RequestHead) {
        if head.keep_alive && head.wire_len() <= MAX_SPARE_HEAD as u64 {
            self.spare = head.into_buffers();
        }
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
        let connection = self.connection_header(keep);
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

    /// The Connection value a response needs, if any: `close` when the
    /// connection ends, `keep-alive` when an HTTP/1.0 one does not.
    fn connection_header(&self, keep: bool) -> Option<&'static str> {
        match (keep, self.version) {
            (false, _) => Some("close"),
            (true, Version::Http10) => Some("keep-alive"),
            (true, Version::Http11) => None,
        }
    }

    /// Encodes the head of a response whose body is the request body itself,
    /// sent back piece by piece as it is read, so nothing but the output
    /// queue holds it: with the request's Content-Length, or chunked when
    /// the request is chunked. Each piece then goes out through
    /// `encode_streamed`, and `finish_streaming` ends the response once the
    /// body has. Returns whether the pieces are chunked.
    ///
    /// A failure after this point (a malformed chunk, the peer gone, a
    /// timeout) can no longer be answered: the connection is closed with
    /// the response cut short, which is how the client learns of it.
    pub fn write_streaming_head(
        &mut self,
        out: &mut Vec<u8>,
        status: u16,
        headers: &[u8],
        close: bool,
    ) -> bool {
        let (len, chunked) = match &self.state {
            State::Body(BodyState::Length { total, .. }) => (Some(*total), false),
            State::Body(BodyState::Chunked(_)) => (None, true),
            // Only called right after a head; the body framing is known.
            _ => (Some(0), false),
        };
        // HTTP/1.0 requests cannot be chunked (head.rs refuses them), so a
        // chunked response always goes to a client that reads it.
        let keep = self.keep_alive && !close && !self.eof;
        let connection = self.connection_header(keep);
        let mut lines = headers.to_vec();
        if chunked {
            lines.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
        }
        encode_head(out, status, len, connection, &lines);
        self.streamed = Some(Streamed { chunked, keep });
        chunked
    }

    /// Ends a response started by `write_streaming_head` once the request
    /// body has ended (`Event::End`). Returns whether the connection stays
    /// open for another request.
    pub fn finish_streaming(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(s) = self.streamed.take() else {
            return false;
        };
        if s.chunked {
            out.extend_from_slice(b"0\r\n\r\n");
        }
        let keep = s.keep && !self.eof && matches!(self.state, State::Respond);
        if !keep && self.start < self.end {
            self.unread = true;
        }
        self.state = if keep { State::Idle } else { State::Closed };
        keep
    }

    /// Answers a protocol error with a short text body and closes. A
    /// request whose response has started gets nothing more: the cut-short
    /// response and the close say it failed.
    pub fn write_error(&mut self, out: &mut Vec<u8>, err: &ProtoError) {
        if self.streamed.take().is_some() {
            self.state = State::Closed;
            self.unread = true;
            return;
        }
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

#[cfg(test)]
mod tests;
