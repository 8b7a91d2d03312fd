//! A deliberately misbehaving HTTP server for testing how the load
//! generator counts failures: it closes early, varies its lengths, stalls,
//! pauses everyone once, closes kept-alive connections, sends bytes past
//! a response, trickles one byte at a time, or records exactly what it was
//! sent. Loopback only, stopped on drop.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub enum Behaviour {
    /// Sends part of a response, then closes.
    CloseEarly,
    /// Bodies of 10..16 bytes, changing per request.
    VaryingLength,
    /// Reads the request and never answers.
    Stall,
    /// Answers normally, but after `after` requests every connection
    /// waits out one `pause` before answering.
    PauseOnce { after: u64, pause: Duration },
    /// Records every request byte for byte (head and body) in `captured`
    /// and answers 200 with the body "ok".
    Capture,
    /// Answers keep-alive requests, but closes each connection after this
    /// many responses without announcing it (no `Connection: close`), as a
    /// server does when it drops an idle kept-alive connection.
    CloseAfter(u64),
    /// Answers the first request it ever gets (keep-alive) and closes that
    /// connection; every later request is read and its connection closed
    /// without a byte.
    AnswerFirstOnly,
    /// Body length 10 + the connection's accept order (0, 1, ...): lengths
    /// differ between connections, never on one connection.
    LengthPerConnection,
    /// Answers 200 with `Content-Length: 2` and the body "ok", followed in
    /// the same write by bytes past that length ("junk"), keep-alive.
    ExtraBytes,
    /// Sends a close-delimited answer (`HTTP/1.0 200 OK`, body "ok") one
    /// byte at a time, this long apart, then closes.
    Trickle(Duration),
    /// Answers every request with exactly these bytes, keep-alive.
    Raw(&'static [u8]),
    /// Answers request k (from 1, across connections) with status
    /// `codes[(k - 1) % len]` and the body "ok", keep-alive.
    StatusCycle(&'static [u16]),
}

pub struct FakeServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
    /// Requests read so far (complete heads, bodies included).
    pub requests: Arc<AtomicU64>,
    /// `Behaviour::Capture`: every request as received.
    pub captured: Arc<Mutex<Vec<Vec<u8>>>>,
}

struct Shared {
    behaviour: Behaviour,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicU64>,
    captured: Arc<Mutex<Vec<Vec<u8>>>>,
    pause_until: Mutex<Option<Instant>>,
}

impl FakeServer {
    pub fn start(behaviour: Behaviour) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicU64::new(0));
        let captured = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            behaviour,
            stop: stop.clone(),
            requests: requests.clone(),
            captured: captured.clone(),
            pause_until: Mutex::new(None),
        });
        let accept = std::thread::spawn(move || {
            for (index, conn) in (0u64..).zip(listener.incoming()) {
                if shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let shared = shared.clone();
                std::thread::spawn(move || serve(conn, &shared, index));
            }
        });
        FakeServer {
            addr,
            stop,
            accept: Some(accept),
            requests,
            captured,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Takes the requests captured so far, leaving none.
    pub fn take_captured(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.captured.lock().unwrap())
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// One request as read off the wire.
struct Request {
    raw: Vec<u8>,
    keep_alive: bool,
    head: bool,
}

/// Reads whole requests (head, then a Content-Length body); bytes read
/// past one request are kept for the next.
#[derive(Default)]
struct Reader {
    buf: Vec<u8>,
}

impl Reader {
    fn next(&mut self, conn: &mut TcpStream, stop: &AtomicBool) -> Option<Request> {
        let mut b = [0u8; 4096];
        loop {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head_len = end + 4;
                let text = String::from_utf8_lossy(&self.buf[..head_len]).to_ascii_lowercase();
                let body_len = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if self.buf.len() >= head_len + body_len {
                    let raw: Vec<u8> = self.buf.drain(..head_len + body_len).collect();
                    return Some(Request {
                        raw,
                        keep_alive: text.contains("connection: keep-alive"),
                        head: text.starts_with("head "),
                    });
                }
            }
            match conn.read(&mut b) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&b[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    if stop.load(Ordering::SeqCst) {
                        return None;
                    }
                }
                Err(_) => return None,
            }
        }
    }
}

/// Writes a 200 response; false if the client is gone.
fn respond(conn: &mut TcpStream, keep: bool, body: &str, head: bool) -> bool {
    let conn_hdr = if keep { "keep-alive" } else { "close" };
    let r = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: {conn_hdr}\r\n\r\n{}",
        body.len(),
        if head { "" } else { body }
    );
    conn.write_all(r.as_bytes()).is_ok()
}

fn serve(mut conn: TcpStream, s: &Shared, index: u64) {
    let _ = conn.set_read_timeout(Some(Duration::from_millis(50)));
    let _ = conn.set_nodelay(true);
    let mut reader = Reader::default();
    let mut on_this_conn = 0;
    while let Some(req) = reader.next(&mut conn, &s.stop) {
        let n = s.requests.fetch_add(1, Ordering::SeqCst) + 1;
        on_this_conn += 1;
        let keep = req.keep_alive;
        match s.behaviour {
            Behaviour::CloseEarly => {
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
                return;
            }
            Behaviour::Stall => {
                while !s.stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                return;
            }
            Behaviour::VaryingLength => {
                let body = "x".repeat(10 + (n % 7) as usize);
                if !respond(&mut conn, keep, &body, req.head) {
                    return;
                }
            }
            Behaviour::PauseOnce { after, pause } => {
                let until = {
                    let mut p = s.pause_until.lock().unwrap();
                    if n == after {
                        *p = Some(Instant::now() + pause);
                    }
                    *p
                };
                if let Some(t) = until {
                    let now = Instant::now();
                    if t > now {
                        std::thread::sleep(t - now);
                    }
                }
                if !respond(&mut conn, keep, "ok", req.head) {
                    return;
                }
            }
            Behaviour::Capture => {
                s.captured.lock().unwrap().push(req.raw);
                if !respond(&mut conn, keep, "ok", req.head) {
                    return;
                }
            }
            Behaviour::CloseAfter(limit) => {
                if !respond(&mut conn, keep, "ok", req.head) || on_this_conn >= limit {
                    return;
                }
            }
            Behaviour::AnswerFirstOnly => {
                if n == 1 {
                    respond(&mut conn, keep, "ok", req.head);
                }
                return;
            }
            Behaviour::ExtraBytes => {
                let r =
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nokjunk";
                if conn.write_all(r).is_err() {
                    return;
                }
            }
            Behaviour::Raw(bytes) => {
                if conn.write_all(bytes).is_err() {
                    return;
                }
            }
            Behaviour::StatusCycle(codes) => {
                let code = codes[((n - 1) % codes.len() as u64) as usize];
                let conn_hdr = if keep { "keep-alive" } else { "close" };
                let r = format!(
                    "HTTP/1.1 {code} X\r\nContent-Length: 2\r\nConnection: {conn_hdr}\r\n\r\nok"
                );
                if conn.write_all(r.as_bytes()).is_err() || !keep {
                    return;
                }
            }
            Behaviour::Trickle(gap) => {
                for b in b"HTTP/1.0 200 OK\r\n\r\nok" {
                    if s.stop.load(Ordering::SeqCst) || conn.write_all(&[*b]).is_err() {
                        return;
                    }
                    std::thread::sleep(gap);
                }
                return;
            }
            Behaviour::LengthPerConnection => {
                let body = "x".repeat(10 + index as usize);
                if !respond(&mut conn, keep, &body, req.head) {
                    return;
                }
            }
        }
        if !keep {
            return;
        }
    }
}
