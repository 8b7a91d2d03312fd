//! Raw exchanges with a target: requests built byte for byte, sent whole
//! or in pieces, and whatever comes back read as responses (framed by
//! `http::client`) plus anything after them, with how the connection
//! ended. Every read is bounded by a deadline.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::http::client::{flaw_example, ResponseError, ResponseParser};

/// How long a connect may take before check gives up on it.
pub const CONNECT_LIMIT: Duration = Duration::from_secs(3);
/// The granularity of every wait: reads time out this often so deadlines
/// and Ctrl-C are seen.
const POLL: Duration = Duration::from_millis(20);

/// The most bytes one exchange keeps: a path naming a huge file or an
/// endless stream must not take the memory of 100 burst readers.
const MAX_KEPT: usize = 4 << 20;

/// Where a target is and what to ask it for.
#[derive(Debug, Clone)]
pub struct Probe {
    pub addr: SocketAddr,
    /// The Host header value.
    pub host: String,
    /// The resource checked (`--path`, or a `url:` target's own).
    pub path: String,
    /// A path that does not exist on the target (a random name).
    pub missing: String,
}

impl Probe {
    /// `METHOD PATH VERSION`, Host, then `fields` (each ending in CRLF)
    /// and the blank line.
    pub fn request(&self, method: &str, path: &str, version: &str, fields: &str) -> Vec<u8> {
        format!(
            "{method} {path} {version}\r\nHost: {}\r\nUser-Agent: loadlab-check\r\n{fields}\r\n",
            self.host
        )
        .into_bytes()
    }

    /// A plain HTTP/1.1 GET (keep-alive) of `path`.
    pub fn get(&self, path: &str) -> Vec<u8> {
        self.request("GET", path, "HTTP/1.1", "")
    }

    /// A GET of `path` that asks the server to close after answering.
    pub fn get_close(&self, path: &str) -> Vec<u8> {
        self.request("GET", path, "HTTP/1.1", "Connection: close\r\n")
    }

    pub fn connect(&self) -> std::io::Result<TcpStream> {
        let s = TcpStream::connect_timeout(&self.addr, CONNECT_LIMIT)?;
        s.set_nodelay(true)?;
        Ok(s)
    }

    /// Connects and sends `bytes` in one write.
    pub fn open(&self, bytes: &[u8]) -> Result<TcpStream, String> {
        let mut s = self.connect().map_err(|e| format!("connect failed: {e}"))?;
        s.write_all(bytes)
            .map_err(|e| format!("sending failed: {e}"))?;
        Ok(s)
    }

    /// Connects, sends `bytes` in one write and reads as `want` says.
    pub fn exchange(&self, bytes: &[u8], want: Want) -> Transcript {
        match self.open(bytes) {
            Ok(mut s) => read(&mut s, want),
            Err(why) => Transcript::failed(why),
        }
    }

    /// Connects, sends each piece `gap` apart and reads as `want` says.
    pub fn exchange_pieces(&self, pieces: &[&[u8]], gap: Duration, want: Want) -> Transcript {
        match self.connect() {
            Ok(mut s) => {
                for (i, p) in pieces.iter().enumerate() {
                    if i > 0 {
                        std::thread::sleep(gap);
                    }
                    if let Err(e) = s.write_all(p) {
                        return Transcript::failed(format!("sending piece {} failed: {e}", i + 1));
                    }
                }
                read(&mut s, want)
            }
            Err(e) => Transcript::failed(format!("connect failed: {e}")),
        }
    }
}

/// What to read: how many answers, to what method, and how long to watch
/// the connection after them.
#[derive(Debug, Clone, Copy)]
pub struct Want {
    pub answers: usize,
    /// The requests are HEAD (their answers have no body).
    pub head: bool,
    /// How long the answers may take to arrive.
    pub within: Duration,
    /// After the answers, how long to watch for more bytes or a close.
    pub linger: Duration,
}

impl Want {
    pub fn answers(n: usize) -> Want {
        Want {
            answers: n,
            head: false,
            within: Duration::from_secs(3),
            linger: Duration::ZERO,
        }
    }

    pub fn linger(self, d: Duration) -> Want {
        Want { linger: d, ..self }
    }

    pub fn within(self, d: Duration) -> Want {
        Want { within: d, ..self }
    }

    pub fn head(self) -> Want {
        Want { head: true, ..self }
    }
}

/// How a connection ended, as far as check watched it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// The server closed it (EOF).
    Closed,
    /// The server reset it.
    Reset,
    /// Still open when check stopped watching.
    Open,
    /// check could not connect or send: the reason.
    NotMade(String),
}

/// One answer as it came: its final head's fields, its body (transfer
/// coding removed) and how that body was framed.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    /// The final head's status line, as sent.
    pub status_line: Vec<u8>,
    pub fields: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
    /// Interim (1xx) heads came before it.
    pub interim: Vec<u16>,
    /// The framing the server chose.
    pub framing: BodyFraming,
    pub keep_alive: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    Length,
    Chunked,
    UntilClose,
    None,
}

impl Answer {
    /// The first value of field `name` (case-insensitive).
    pub fn field(&self, name: &str) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// Whether field `name` lists `token` (case-insensitive), as
    /// Connection does.
    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.fields
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .flat_map(|(_, v)| v.split(|&b| b == b','))
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
    }

    /// Status and body: what must match between two answers to the same
    /// request.
    pub fn same_as(&self, other: &Answer) -> bool {
        self.status == other.status && self.body == other.body
    }
}

/// Everything read from one connection.
#[derive(Debug, Clone)]
pub struct Transcript {
    pub raw: Vec<u8>,
    pub answers: Vec<Answer>,
    /// Bytes after the answers wanted, within the linger.
    pub extra: Vec<u8>,
    pub end: End,
    /// The bytes could not be read as responses.
    pub error: Option<ResponseError>,
    /// When the first byte came, from the start of the read.
    pub first_byte: Option<Duration>,
    /// When the end was seen (close, reset) from the start of the read.
    pub ended_after: Option<Duration>,
}

impl Transcript {
    pub fn failed(why: String) -> Transcript {
        Transcript {
            raw: Vec::new(),
            answers: Vec::new(),
            extra: Vec::new(),
            end: End::NotMade(why),
            error: None,
            first_byte: None,
            ended_after: None,
        }
    }

    /// The bytes received, escaped and cut for evidence.
    pub fn shown(&self) -> String {
        if self.raw.is_empty() {
            "nothing".into()
        } else {
            format!("\"{}\"", flaw_example(&self.raw))
        }
    }

    /// How the exchange ended, in words.
    pub fn ending(&self) -> String {
        match &self.end {
            End::Closed => "then the server closed".into(),
            End::Reset => "then the server reset the connection".into(),
            End::Open => "connection still open".into(),
            End::NotMade(why) => why.clone(),
        }
    }
}

/// `bytes` for evidence: quoted, escaped, cut.
pub fn shown(bytes: &[u8]) -> String {
    format!("\"{}\"", flaw_example(bytes))
}

/// Reads `want.answers` answers, then watches `want.linger` for more
/// bytes or the close. Stops at a parse error, the close, or the time
/// allowed.
pub fn read(s: &mut TcpStream, want: Want) -> Transcript {
    let start = Instant::now();
    let _ = s.set_read_timeout(Some(POLL));
    // Nothing to wait for: `linger` is how long to watch.
    let mut answered_at = (want.answers == 0).then_some(start);
    let mut t = Transcript::failed(String::new());
    t.end = End::Open;
    let mut parser = ResponseParser::new(want.head);
    let mut body = Vec::new();
    let mut begun = 0usize; // where the answer being read starts in raw
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let deadline = match answered_at {
            Some(at) => at + want.linger,
            None => start + want.within,
        };
        if Instant::now() >= deadline {
            break;
        }
        let n = match s.read(&mut buf) {
            Ok(0) => {
                t.end = End::Closed;
                if t.answers.len() < want.answers && t.error.is_none() {
                    match parser.feed_eof() {
                        Ok(Some(_)) => {
                            let ans = answer(&t.raw[begun..], std::mem::take(&mut body), want.head);
                            t.answers.push(ans);
                        }
                        Ok(None) => {}
                        Err(e) => t.error = Some(e),
                    }
                }
                break;
            }
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => {
                t.end = End::Reset;
                break;
            }
            Err(e) => {
                t.end = End::NotMade(format!("reading failed: {e}"));
                break;
            }
        };
        t.first_byte.get_or_insert(start.elapsed());
        if t.raw.len() + n > MAX_KEPT {
            t.end = End::NotMade(format!(
                "answer larger than {} MiB: not read further",
                MAX_KEPT >> 20
            ));
            break;
        }
        let at = t.raw.len();
        t.raw.extend_from_slice(&buf[..n]);
        if answered_at.is_some() || t.error.is_some() {
            t.extra.extend_from_slice(&buf[..n]);
            continue;
        }
        let mut off = at;
        while off < t.raw.len() && t.answers.len() < want.answers {
            match parser.feed_with(&t.raw[off..], |b| body.extend_from_slice(b)) {
                Ok((used, done)) => {
                    off += used;
                    if done.is_some() {
                        let ans = answer(&t.raw[begun..off], std::mem::take(&mut body), want.head);
                        t.answers.push(ans);
                        begun = off;
                    } else if used == 0 {
                        break;
                    }
                }
                Err(e) => {
                    t.error = Some(e);
                    break;
                }
            }
        }
        if t.answers.len() >= want.answers {
            answered_at = Some(Instant::now());
            t.extra.extend_from_slice(&t.raw[off..]);
        }
    }
    if t.end != End::Open {
        t.ended_after = Some(start.elapsed());
    }
    t
}

/// What the head at the start of `raw` says, however much of it came
/// (status 0 and no fields when it could not be parsed).
pub fn head_of(raw: &[u8]) -> Option<Answer> {
    (!raw.is_empty()).then(|| answer(raw, Vec::new(), false))
}

/// Reads the heads at the start of `bytes` (1xx interim ones, then the
/// final one) into an [`Answer`] carrying `body`.
fn answer(bytes: &[u8], body: Vec<u8>, head_request: bool) -> Answer {
    let mut interim = Vec::new();
    let mut rest = bytes;
    loop {
        let mut fields = [httparse::EMPTY_HEADER; 128];
        let mut r = httparse::Response::new(&mut fields);
        let parsed = r.parse(rest);
        let status = r.code.unwrap_or(0);
        let fields_of = |r: &httparse::Response| -> Vec<(String, Vec<u8>)> {
            r.headers
                .iter()
                .map(|h| (h.name.to_string(), h.value.to_vec()))
                .collect()
        };
        match parsed {
            Ok(httparse::Status::Complete(n)) if (100..200).contains(&status) => {
                interim.push(status);
                rest = &rest[n..];
            }
            Ok(httparse::Status::Complete(_)) => {
                let line_end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
                let fields = fields_of(&r);
                let mut a = Answer {
                    status,
                    status_line: rest[..line_end]
                        .strip_suffix(b"\r")
                        .unwrap_or(&rest[..line_end])
                        .to_vec(),
                    fields,
                    body,
                    interim,
                    framing: BodyFraming::None,
                    keep_alive: false,
                };
                let no_body = head_request || status == 204 || status == 304;
                a.framing = if no_body {
                    BodyFraming::None
                } else if a.has_token("transfer-encoding", "chunked") {
                    BodyFraming::Chunked
                } else if a.field("content-length").is_some() {
                    BodyFraming::Length
                } else {
                    BodyFraming::UntilClose
                };
                let http11 = a.status_line.starts_with(b"HTTP/1.1");
                a.keep_alive = if http11 {
                    !a.has_token("connection", "close")
                } else {
                    a.has_token("connection", "keep-alive")
                };
                return a;
            }
            _ => {
                // The framing parser took it, httparse did not: keep what
                // is known so the caller still sees an answer.
                return Answer {
                    status,
                    status_line: rest.split(|&b| b == b'\n').next().unwrap_or(&[]).to_vec(),
                    fields: Vec::new(),
                    body,
                    interim,
                    framing: BodyFraming::None,
                    keep_alive: false,
                };
            }
        }
    }
}

/// Whether a status line follows RFC 9112 section 4 to the letter:
/// `HTTP/d.d SP ddd SP reason`.
pub fn status_line_ok(line: &[u8]) -> bool {
    let b = line;
    b.len() >= 13
        && b.starts_with(b"HTTP/")
        && b[5].is_ascii_digit()
        && b[6] == b'.'
        && b[7].is_ascii_digit()
        && b[8] == b' '
        && b[9..12].iter().all(u8::is_ascii_digit)
        && b[12] == b' '
        && b[13..]
            .iter()
            .all(|&c| c == b'\t' || c == b' ' || (0x21..=0x7e).contains(&c) || c >= 0x80)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_strictly() {
        assert!(status_line_ok(b"HTTP/1.1 200 OK"));
        assert!(status_line_ok(b"HTTP/1.0 404 "));
        assert!(!status_line_ok(b"HTTP/1.1 200"));
        assert!(!status_line_ok(b"HTTP/1.1 OK 200"));
        assert!(!status_line_ok(b"HTTP 200 OK"));
        assert!(!status_line_ok(b"HTTP/1.1 2000 OK"));
    }

    #[test]
    fn an_answer_knows_its_framing_and_tokens() {
        let a = answer(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: keep-alive, Upgrade\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"hi".to_vec(),
            false,
        );
        assert_eq!(a.interim, vec![100]);
        assert_eq!(a.status, 200);
        assert_eq!(a.framing, BodyFraming::Chunked);
        assert!(a.has_token("connection", "upgrade"));
        assert!(a.keep_alive);
        let b = answer(b"HTTP/1.0 200 OK\r\n\r\n", Vec::new(), false);
        assert_eq!(b.framing, BodyFraming::UntilClose);
        assert!(!b.keep_alive);
    }
}
