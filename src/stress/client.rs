//! A small blocking HTTP/1.1 client for the file API: one connection per
//! transfer, bodies streamed (never held whole in memory), every wait
//! bounded by the transfer's deadline. A client that has to queue for a
//! server worker simply blocks in connect, write or read until then.
//! Addresses are `net::url`'s, responses are read by `net::response`.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::content::{Content, BLOCK};
use crate::net::response::{ReadError, ResponseHead, ResponseReader};
use crate::net::url::{HttpUrl, UrlError};

/// Stress's refusal of a URL it cannot use.
const ONLY_HTTP: &str = "only http:// URLs are supported";

/// Largest small JSON body (an upload's answer, an error) read into memory.
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
            UrlError::NotHttp(_) => ONLY_HTTP.into(),
            UrlError::NoHost(_) => "no host".into(),
            UrlError::Unresolved { authority, .. } => format!("cannot resolve {authority}"),
            other => other.to_string(),
        };
        format!("--url {url}: {why}")
    })?;
    // The file API client is blocking and plain; https there is left out.
    if u.tls {
        return Err(format!("--url {url}: {ONLY_HTTP}"));
    }
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

impl From<ReadError> for ClientError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Io(e) => e.into(),
            other => ClientError::Protocol(other.to_string()),
        }
    }
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
/// The digest is asked for (RFC 9530 `Want-Repr-Digest`): the server
/// computes it only then, and every stress upload is verified with it.
pub fn upload(ep: &HttpUrl, name: &str, content: &Content, until: Until) -> Result<Uploaded> {
    let mut c = Exchange::open(ep, until)?;
    let head = format!(
        "PUT {}{name} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nWant-Repr-Digest: sha-256=1\r\nConnection: close\r\n\r\n",
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
pub fn download(ep: &HttpUrl, name: &str, until: Until) -> Result<(u64, [u8; 32])> {
    let mut c = Exchange::open(ep, until)?;
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
    let len = length(&h)?;
    let mut hasher = Sha256::new();
    c.read_body(|b| hasher.update(b))?;
    Ok((len, hasher.finalize().into()))
}

/// Reads `len` bytes of `name` from `start` with a Range request.
pub fn read_range(ep: &HttpUrl, name: &str, start: u64, len: u64, until: Until) -> Result<Vec<u8>> {
    let mut c = Exchange::open(ep, until)?;
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
    let n = length(&h)?;
    if n > MAX_SMALL as u64 * 16 {
        return Err(ClientError::Protocol(format!("range answer of {n} bytes")));
    }
    let mut out = Vec::with_capacity(n as usize);
    c.read_body(|b| out.extend_from_slice(b))?;
    Ok(out)
}

/// Deletes `name`; returns the status (204, or 404 if it was not there).
pub fn delete(ep: &HttpUrl, name: &str, until: Until) -> Result<u16> {
    let mut c = Exchange::open(ep, until)?;
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
pub fn list(ep: &HttpUrl, until: Until) -> Result<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Entry {
        name: String,
    }
    #[derive(serde::Deserialize)]
    struct Listing {
        files: Vec<Entry>,
    }
    let mut c = Exchange::open(ep, until)?;
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
    let n = length(&h)?;
    if n > MAX_LISTING {
        return Err(ClientError::Protocol(format!("{n}-byte listing")));
    }
    let mut body = Vec::new();
    c.read_body(|b| body.extend_from_slice(b))?;
    let l: Listing = serde_json::from_slice(&body)
        .map_err(|e| ClientError::Protocol(format!("listing: {e}")))?;
    Ok(l.files.into_iter().map(|e| e.name).collect())
}

/// The body length a response must announce: the file API sends
/// Content-Length, and a transfer is checked against it.
fn length(h: &ResponseHead) -> Result<u64> {
    h.body_length
        .ok_or_else(|| ClientError::Protocol("response without Content-Length".into()))
}

/// How long a transfer may go on: until its deadline, or until `stop`
/// says the run was interrupted (Ctrl-C), whichever comes first.
#[derive(Clone, Copy)]
pub struct Until<'a> {
    pub deadline: Instant,
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

impl Until<'static> {
    /// Bounded by `deadline` alone: housekeeping (cleanup, probes) that
    /// must finish even in an interrupted run.
    pub fn deadline(deadline: Instant) -> Self {
        Until {
            deadline,
            stop: &|| false,
        }
    }
}

impl Until<'_> {
    /// Time left before the deadline; an error once it passed or the run
    /// was stopped.
    fn left(&self) -> io::Result<Duration> {
        if (self.stop)() {
            return Err(io::Error::other(STOPPED));
        }
        remaining(self.deadline)
    }
}

/// What a transfer cut short by Ctrl-C fails with.
pub const STOPPED: &str = "stopped: the run was interrupted";
/// Longest a blocked read or write waits before the stop flag is looked
/// at again, so Ctrl-C ends a transfer of any size within about this.
const STOP_POLL: Duration = Duration::from_millis(100);

/// A socket whose every read and write is bounded by what is left of one
/// deadline, and given up when the run is stopped.
struct Deadlined<'a> {
    stream: TcpStream,
    until: Until<'a>,
}

impl Deadlined<'_> {
    /// Runs one blocking `op` in slices of at most [`STOP_POLL`], so the
    /// stop flag is looked at while it waits. A timed-out slice has moved
    /// no byte (the kernel returns a partial count otherwise), so it is
    /// simply tried again.
    fn bounded<T>(&mut self, mut op: impl FnMut(&mut TcpStream) -> io::Result<T>) -> io::Result<T> {
        loop {
            let slice = self.until.left()?.min(STOP_POLL);
            self.stream.set_read_timeout(Some(slice))?;
            self.stream.set_write_timeout(Some(slice))?;
            match op(&mut self.stream) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                other => return other,
            }
        }
    }
}

impl Read for Deadlined<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.bounded(|s| s.read(buf))
    }
}

impl Write for Deadlined<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bounded(|s| s.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

/// One request and its response on a connection of their own.
struct Exchange<'a> {
    io: Deadlined<'a>,
    response: ResponseReader,
}

impl<'a> Exchange<'a> {
    fn open(ep: &HttpUrl, until: Until<'a>) -> Result<Exchange<'a>> {
        let stream = TcpStream::connect_timeout(&ep.addr, until.left()?)?;
        let _ = stream.set_nodelay(true);
        Ok(Exchange {
            io: Deadlined { stream, until },
            response: ResponseReader::new(false),
        })
    }

    fn send(&mut self, bytes: &[u8]) -> Result<()> {
        self.io.write_all(bytes)?;
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

    fn read_head(&mut self) -> Result<ResponseHead> {
        Ok(self.response.read_head(&mut self.io)?)
    }

    /// Streams the body into `f`; returns its length.
    fn read_body(&mut self, f: impl FnMut(&[u8])) -> Result<u64> {
        Ok(self.response.read_body(&mut self.io, f)?)
    }

    /// A small body (JSON, error text), bounded.
    fn read_small(&mut self, h: &ResponseHead) -> Result<Vec<u8>> {
        let too_large = |n: u64| ClientError::Protocol(format!("unexpected {n}-byte body"));
        if let Some(n) = h.body_length.filter(|&n| n > MAX_SMALL as u64) {
            return Err(too_large(n));
        }
        let mut out = Vec::new();
        let n = self.read_body(|b| {
            if out.len() <= MAX_SMALL {
                out.extend_from_slice(b)
            }
        })?;
        if n > MAX_SMALL as u64 {
            return Err(too_large(n));
        }
        Ok(out)
    }
}

fn remaining(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::ErrorKind::TimedOut.into());
    }
    Ok(left)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn stress_refuses_https_in_one_line_since_its_client_is_plain() {
        let e = files_url("https://127.0.0.1:8443/").unwrap_err();
        assert_eq!(
            e,
            "--url https://127.0.0.1:8443/: only http:// URLs are supported"
        );
    }

    #[test]
    fn a_stopped_run_ends_a_transfer_that_waits_long_before_its_deadline() {
        // A server that accepts (into the backlog) and never answers: the
        // download would wait out its 60 s deadline; stop ends it at once.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ep = files_url(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        let stopped = AtomicBool::new(false);
        let stop = || stopped.load(Ordering::Relaxed);
        let until = Until {
            deadline: Instant::now() + Duration::from_secs(60),
            stop: &stop,
        };
        let t0 = Instant::now();
        let e = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                stopped.store(true, Ordering::Relaxed);
            });
            download(&ep, "x", until).unwrap_err()
        });
        assert_eq!(e.to_string(), STOPPED);
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    }
}
