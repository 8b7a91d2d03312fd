//! A small blocking HTTP/1.1 client for the file API: one connection per
//! transfer, bodies streamed (never held whole in memory), every wait
//! bounded by the transfer's deadline. A client that has to queue for a
//! server worker simply blocks in connect, write or read until then.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::content::{Content, BLOCK};
use crate::net::url::{HttpUrl, UrlError};

/// Largest response head or small JSON body read into memory.
const MAX_SMALL: usize = 64 * 1024;
/// Largest directory listing read into memory.
const MAX_LISTING: u64 = 64 << 20;
/// Where the file API lives when a URL names no path.
pub const FILES_PREFIX: &str = "/files/";

/// Parses `--url http://HOST:PORT[/PREFIX/]`: the file API's address, and
/// in `path` the prefix that names are appended to (`/files/` when the
/// URL has no path).
pub fn files_url(url: &str) -> std::result::Result<HttpUrl, String> {
    let mut u = HttpUrl::parse(url).map_err(|e| {
        let why = match e {
            UrlError::Https | UrlError::NotHttp(_) => "only http:// URLs are supported".into(),
            UrlError::NoHost(_) => "no host".into(),
            UrlError::Unresolved { authority, .. } => format!("cannot resolve {authority}"),
            other => other.to_string(),
        };
        format!("--url {url}: {why}")
    })?;
    u.path = match u.path.trim_end_matches('/') {
        "" => FILES_PREFIX.to_string(),
        p => format!("{p}/"),
    };
    Ok(u)
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("timed out")]
    Timeout,
    #[error("{0}")]
    Io(io::Error),
    #[error("HTTP {0}")]
    Status(u16),
    #[error("bad response: {0}")]
    Protocol(String),
}

impl From<io::Error> for ClientError {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ClientError::Timeout,
            _ => ClientError::Io(e),
        }
    }
}

type Result<T> = std::result::Result<T, ClientError>;

/// What the server answered to an upload.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Uploaded {
    pub size: u64,
    pub sha256: String,
}

/// Uploads `content` as `name`; returns the server's size and digest.
pub fn upload(ep: &HttpUrl, name: &str, content: &Content, deadline: Instant) -> Result<Uploaded> {
    let mut c = Conn::open(ep, deadline)?;
    let head = format!(
        "PUT {}{name} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        ep.path, ep.host_header(), content.len
    );
    let sent = c
        .send(head.as_bytes())
        .and_then(|_| c.send_content(content));
    if let Err(e) = sent {
        // The server may have answered early (413, 507) and closed; its
        // status says more than the broken pipe.
        return Err(match c.read_head() {
            Ok(h) if h.status >= 300 => ClientError::Status(h.status),
            _ => e,
        });
    }
    let h = c.read_head()?;
    if h.status != 200 && h.status != 201 {
        return Err(ClientError::Status(h.status));
    }
    let body = c.read_small(&h)?;
    serde_json::from_slice(&body).map_err(|e| ClientError::Protocol(format!("upload answer: {e}")))
}

/// Downloads `name`; returns its length and SHA-256, hashed as it arrives.
pub fn download(ep: &HttpUrl, name: &str, deadline: Instant) -> Result<(u64, [u8; 32])> {
    let mut c = Conn::open(ep, deadline)?;
    c.send(
        format!(
            "GET {}{name} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            ep.path,
            ep.host_header()
        )
        .as_bytes(),
    )?;
    let h = c.read_head()?;
    if h.status != 200 {
        return Err(ClientError::Status(h.status));
    }
    let len = h.length()?;
    let mut hasher = Sha256::new();
    c.read_body(len, |b| hasher.update(b))?;
    Ok((len, hasher.finalize().into()))
}

/// Reads `len` bytes of `name` from `start` with a Range request.
pub fn read_range(
    ep: &HttpUrl,
    name: &str,
    start: u64,
    len: u64,
    deadline: Instant,
) -> Result<Vec<u8>> {
    let mut c = Conn::open(ep, deadline)?;
    let end = start + len.max(1) - 1;
    c.send(
        format!(
            "GET {}{name} HTTP/1.1\r\nHost: {}\r\nRange: bytes={start}-{end}\r\nConnection: close\r\n\r\n",
            ep.path, ep.host_header()
        )
        .as_bytes(),
    )?;
    let h = c.read_head()?;
    if h.status != 206 {
        return Err(ClientError::Status(h.status));
    }
    let n = h.length()?;
    if n > MAX_SMALL as u64 * 16 {
        return Err(ClientError::Protocol(format!("range answer of {n} bytes")));
    }
    let mut out = Vec::with_capacity(n as usize);
    c.read_body(n, |b| out.extend_from_slice(b))?;
    Ok(out)
}

/// Deletes `name`; returns the status (204, or 404 if it was not there).
pub fn delete(ep: &HttpUrl, name: &str, deadline: Instant) -> Result<u16> {
    let mut c = Conn::open(ep, deadline)?;
    c.send(
        format!(
            "DELETE {}{name} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            ep.path,
            ep.host_header()
        )
        .as_bytes(),
    )?;
    let h = c.read_head()?;
    c.read_small(&h)?;
    Ok(h.status)
}

/// The names listed by `GET {prefix}`.
pub fn list(ep: &HttpUrl, deadline: Instant) -> Result<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Entry {
        name: String,
    }
    #[derive(serde::Deserialize)]
    struct Listing {
        files: Vec<Entry>,
    }
    let mut c = Conn::open(ep, deadline)?;
    c.send(
        format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            ep.path,
            ep.host_header()
        )
        .as_bytes(),
    )?;
    let h = c.read_head()?;
    if h.status != 200 {
        return Err(ClientError::Status(h.status));
    }
    let n = h.length()?;
    if n > MAX_LISTING {
        return Err(ClientError::Protocol(format!("{n}-byte listing")));
    }
    let mut body = Vec::new();
    c.read_body(n, |b| body.extend_from_slice(b))?;
    let l: Listing = serde_json::from_slice(&body)
        .map_err(|e| ClientError::Protocol(format!("listing: {e}")))?;
    Ok(l.files.into_iter().map(|e| e.name).collect())
}

struct Head {
    status: u16,
    content_length: Option<u64>,
}

impl Head {
    fn length(&self) -> Result<u64> {
        self.content_length
            .ok_or_else(|| ClientError::Protocol("response without Content-Length".into()))
    }
}

struct Conn {
    stream: TcpStream,
    deadline: Instant,
    /// Bytes read past the head: the start of the body.
    extra: Vec<u8>,
}

impl Conn {
    fn open(ep: &HttpUrl, deadline: Instant) -> Result<Conn> {
        let stream = TcpStream::connect_timeout(&ep.addr, remaining(deadline)?)?;
        let _ = stream.set_nodelay(true);
        Ok(Conn {
            stream,
            deadline,
            extra: Vec::new(),
        })
    }

    /// Bounds the next blocking call by what is left of the deadline.
    fn arm(&self) -> Result<()> {
        let left = remaining(self.deadline)?;
        self.stream.set_read_timeout(Some(left))?;
        self.stream.set_write_timeout(Some(left))?;
        Ok(())
    }

    fn send(&mut self, bytes: &[u8]) -> Result<()> {
        self.arm()?;
        self.stream.write_all(bytes)?;
        Ok(())
    }

    fn send_content(&mut self, content: &Content) -> Result<()> {
        let mut buf = vec![0u8; BLOCK];
        let mut off = 0;
        while off < content.len {
            let n = (content.len - off).min(BLOCK as u64) as usize;
            content.fill(off, &mut buf[..n]);
            self.send(&buf[..n])?;
            off += n as u64;
        }
        Ok(())
    }

    fn read_head(&mut self) -> Result<Head> {
        let mut buf = std::mem::take(&mut self.extra);
        let mut chunk = [0u8; 4096];
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut resp = httparse::Response::new(&mut headers);
            match resp.parse(&buf) {
                Ok(httparse::Status::Complete(n)) => {
                    let status = resp.code.unwrap_or(0);
                    let content_length = resp
                        .headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                        .and_then(|h| std::str::from_utf8(h.value).ok())
                        .and_then(|v| v.trim().parse().ok());
                    self.extra = buf[n..].to_vec();
                    if (100..200).contains(&status) {
                        buf = std::mem::take(&mut self.extra);
                        continue;
                    }
                    return Ok(Head {
                        status,
                        content_length,
                    });
                }
                Ok(httparse::Status::Partial) if buf.len() < MAX_SMALL => {}
                Ok(httparse::Status::Partial) => {
                    return Err(ClientError::Protocol("response head too large".into()))
                }
                Err(e) => return Err(ClientError::Protocol(format!("response head: {e}"))),
            }
            self.arm()?;
            match self.stream.read(&mut chunk)? {
                0 => {
                    return Err(ClientError::Protocol(
                        "connection closed before a response".into(),
                    ))
                }
                n => buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Streams exactly `len` body bytes into `f`.
    fn read_body(&mut self, len: u64, mut f: impl FnMut(&[u8])) -> Result<()> {
        let first = std::mem::take(&mut self.extra);
        let take = first.len().min(len as usize);
        f(&first[..take]);
        let mut left = len - take as u64;
        let mut buf = vec![0u8; BLOCK];
        while left > 0 {
            self.arm()?;
            let want = left.min(BLOCK as u64) as usize;
            match self.stream.read(&mut buf[..want]) {
                Ok(0) => {
                    return Err(ClientError::Protocol(format!(
                        "body ended {left} bytes early"
                    )))
                }
                Ok(n) => {
                    f(&buf[..n]);
                    left -= n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// A small body (JSON, error text), bounded.
    fn read_small(&mut self, h: &Head) -> Result<Vec<u8>> {
        let n = h.content_length.unwrap_or(0);
        if n > MAX_SMALL as u64 {
            return Err(ClientError::Protocol(format!("unexpected {n}-byte body")));
        }
        let mut out = Vec::with_capacity(n as usize);
        self.read_body(n, |b| out.extend_from_slice(b))?;
        Ok(out)
    }
}

fn remaining(deadline: Instant) -> Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(ClientError::Timeout);
    }
    Ok(left)
}
