//! A small forwarding proxy for tests: it records every request head it
//! is sent and the peer that sent it, then forwards: CONNECT opens a
//! tunnel to the named host, an absolute-form request goes to the host
//! in its URL, an origin-form one to a fixed upstream. Loopback only,
//! bounded waits, stopped on drop.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Longest request head the proxy reads.
const HEAD_LIMIT: usize = 64 * 1024;
/// How long a proxied connection may sit idle before the proxy drops it.
const IDLE: Duration = Duration::from_secs(10);

/// One request head as the proxy received it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub peer: SocketAddr,
    pub head: String,
}

impl Seen {
    /// The request line, e.g. `GET http://127.0.0.1:80/ HTTP/1.0`.
    pub fn line(&self) -> &str {
        self.head.lines().next().unwrap_or("")
    }

    /// A header's value, by name in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

pub struct RecordingProxy {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl RecordingProxy {
    /// A proxy that sends origin-form requests to `upstream`.
    pub fn start(upstream: SocketAddr) -> RecordingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (seen.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((c, peer)) => {
                        let s = s.clone();
                        std::thread::spawn(move || {
                            let _ = serve(c, peer, upstream, &s);
                        });
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Err(_) => return,
                }
            }
        });
        RecordingProxy {
            addr,
            seen,
            stop,
            accept: Some(accept),
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for RecordingProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

fn serve(
    mut c: TcpStream,
    peer: SocketAddr,
    upstream: SocketAddr,
    seen: &Mutex<Vec<Seen>>,
) -> io::Result<()> {
    c.set_nonblocking(false)?;
    c.set_read_timeout(Some(IDLE))?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        let n = c.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        got.extend_from_slice(&buf[..n]);
        if let Some(e) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break e + 4;
        }
        if got.len() > HEAD_LIMIT {
            return Ok(());
        }
    };
    let head = String::from_utf8_lossy(&got[..end]).into_owned();
    seen.lock().unwrap().push(Seen {
        peer,
        head: head.clone(),
    });
    let mut words = head.split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let up = if method == "CONNECT" {
        let up = TcpStream::connect(target)?;
        c.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
        up
    } else {
        let authority = target
            .strip_prefix("http://")
            .map(|rest| rest.split('/').next().unwrap_or(rest));
        let mut up = match authority {
            Some(a) => TcpStream::connect(a)?,
            None => TcpStream::connect(upstream)?,
        };
        up.write_all(&got)?;
        up
    };
    up.set_read_timeout(Some(IDLE))?;
    pipe(c, up)
}

/// Copies both ways until each side has closed its half.
fn pipe(a: TcpStream, b: TcpStream) -> io::Result<()> {
    let (mut a_in, mut b_out) = (a.try_clone()?, b.try_clone()?);
    let there = std::thread::spawn(move || {
        let _ = io::copy(&mut a_in, &mut b_out);
        let _ = b_out.shutdown(Shutdown::Write);
    });
    let (mut b_in, mut a_out) = (b, a);
    let _ = io::copy(&mut b_in, &mut a_out);
    let _ = a_out.shutdown(Shutdown::Write);
    let _ = there.join();
    Ok(())
}
