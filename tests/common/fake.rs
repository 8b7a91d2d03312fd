//! A deliberately misbehaving HTTP server for testing how the load
//! generator counts failures: it closes early, varies its lengths, stalls,
//! or pauses everyone once. Loopback only, stopped on drop.

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
}

pub struct FakeServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
    pub requests: Arc<AtomicU64>,
}

struct Shared {
    behaviour: Behaviour,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicU64>,
    pause_until: Mutex<Option<Instant>>,
}

impl FakeServer {
    pub fn start(behaviour: Behaviour) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicU64::new(0));
        let shared = Arc::new(Shared {
            behaviour,
            stop: stop.clone(),
            requests: requests.clone(),
            pause_until: Mutex::new(None),
        });
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let shared = shared.clone();
                std::thread::spawn(move || serve(conn, &shared));
            }
        });
        FakeServer {
            addr,
            stop,
            accept: Some(accept),
            requests,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
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

/// Reads one request head; returns whether it asked for keep-alive.
fn read_head(conn: &mut TcpStream, stop: &AtomicBool) -> Option<bool> {
    let mut buf = Vec::new();
    let mut b = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut b) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&b[..n]),
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
    let text = String::from_utf8_lossy(&buf).to_ascii_lowercase();
    Some(text.contains("connection: keep-alive"))
}

fn serve(mut conn: TcpStream, s: &Shared) {
    let _ = conn.set_read_timeout(Some(Duration::from_millis(50)));
    let _ = conn.set_nodelay(true);
    while let Some(keep) = read_head(&mut conn, &s.stop) {
        let n = s.requests.fetch_add(1, Ordering::SeqCst) + 1;
        let conn_hdr = if keep { "keep-alive" } else { "close" };
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
                let r = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: {conn_hdr}\r\n\r\n{body}",
                    body.len()
                );
                if conn.write_all(r.as_bytes()).is_err() {
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
                let r = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: {conn_hdr}\r\n\r\nok"
                );
                if conn.write_all(r.as_bytes()).is_err() {
                    return;
                }
            }
        }
        if !keep {
            return;
        }
    }
}
