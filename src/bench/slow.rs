//! Slow clients held beside a benchmark (`bench --slow`): N connections
//! that trickle a request head (slowloris), trickle a request body, or
//! read a response a few bytes at a time, on one thread of their own with
//! non-blocking sockets, so thousands fit and the load threads' hot path
//! is untouched. A connection the server closes is opened again: the
//! server faces N slow clients for the whole run.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use crate::catalog::slow::SlowKind;

/// How often each slow connection sends (or reads) its next few bytes:
/// often enough that a gap timeout never fires, far too slowly to finish.
pub const TRICKLE_EVERY: Duration = Duration::from_secs(1);
/// Bytes a slow reader takes per trickle.
pub const READ_PER_TRICKLE: usize = 16;
/// Receive buffer of a slow reader: small, so the server's writes back up
/// after a few KiB instead of filling megabytes of socket buffers.
pub const SLOW_READER_RCVBUF: usize = 4 * 1024;
/// The Content-Length a slow body announces (it never gets there).
pub const SLOW_BODY_LENGTH: u64 = 1 << 20;
/// How long `start` waits for the N connections to be established before
/// the measured load begins.
pub const SETTLE_MAX: Duration = Duration::from_secs(10);
/// The loop's wake-up period: trickles are due at most this late.
const POLL_TICK: Duration = Duration::from_millis(50);
/// A connection the server closed is opened again after this pause, so a
/// server that refuses at once is not hammered in a busy loop.
const REOPEN_PAUSE: Duration = Duration::from_millis(100);

/// What to hold: how many connections of which kind (not `None`: then
/// there is nothing to hold), against which server.
#[derive(Debug, Clone)]
pub struct SlowSpec {
    pub kind: SlowKind,
    pub conns: usize,
    pub addr: SocketAddr,
    /// The Host header value.
    pub host: String,
    /// The path a slow reader asks for (a large response).
    pub path: String,
}

/// What the slow connections met, for the line bench prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlowReport {
    /// Connections established, the first N and every reopening.
    pub connected: u64,
    /// Times the server closed (or reset) a slow connection.
    pub closed_by_server: u64,
    /// Connection attempts that failed (refused, out of descriptors).
    pub connect_failures: u64,
    /// Connections open when the run ended.
    pub held_at_end: usize,
}

/// The running slow connections; `finish` stops them.
pub struct SlowClients {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<SlowReport>,
}

impl SlowClients {
    /// Opens the connections on a thread of their own and waits (at most
    /// SETTLE_MAX) until all are established, so the load that follows
    /// meets them from its first request.
    pub fn start(spec: SlowSpec) -> io::Result<SlowClients> {
        let stop = Arc::new(AtomicBool::new(false));
        let settled = Arc::new(AtomicBool::new(false));
        let mut held = Held::new(spec, Arc::clone(&settled))?;
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("slow-clients".into())
                .spawn(move || held.run(&stop))?
        };
        let until = Instant::now() + SETTLE_MAX;
        while !settled.load(Ordering::Relaxed) && !thread.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(SlowClients { stop, thread })
    }

    /// Stops the slow connections (closing them) and says what they met.
    pub fn finish(self) -> SlowReport {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// One slow connection.
struct Conn {
    stream: Option<TcpStream>,
    /// Established (the first writable event came).
    up: bool,
    /// When it next trickles, or is opened again.
    due: Instant,
}

/// The holder thread's state.
struct Held {
    spec: SlowSpec,
    poll: Poll,
    conns: Vec<Conn>,
    report: SlowReport,
    /// Set once every connection is established.
    settled: Arc<AtomicBool>,
}

impl Held {
    fn new(spec: SlowSpec, settled: Arc<AtomicBool>) -> io::Result<Held> {
        let now = Instant::now();
        let conns = (0..spec.conns)
            .map(|_| Conn {
                stream: None,
                up: false,
                due: now,
            })
            .collect();
        Ok(Held {
            spec,
            poll: Poll::new()?,
            conns,
            report: SlowReport::default(),
            settled,
        })
    }

    fn run(&mut self, stop: &AtomicBool) -> SlowReport {
        let mut events = Events::with_capacity(1024);
        let mut settled = false;
        while !stop.load(Ordering::Relaxed) {
            if self.poll.poll(&mut events, Some(POLL_TICK)).is_err() {
                continue;
            }
            let now = Instant::now();
            for ev in events.iter() {
                let i = ev.token().0;
                if ev.is_writable() && !self.conns[i].up {
                    self.established(i, now);
                }
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    self.drain(i, now);
                }
            }
            for i in 0..self.conns.len() {
                if self.conns[i].due <= now {
                    self.tick(i, now);
                }
            }
            if !settled && self.conns.iter().all(|c| c.up) {
                settled = true;
                self.settled.store(true, Ordering::Relaxed);
            }
        }
        self.report.held_at_end = self.conns.iter().filter(|c| c.up).count();
        self.report
    }

    /// Opens connection `i`, or trickles on it.
    fn tick(&mut self, i: usize, now: Instant) {
        self.conns[i].due = now + TRICKLE_EVERY;
        if self.conns[i].stream.is_none() {
            if self.open(i).is_err() {
                self.report.connect_failures += 1;
                self.conns[i].due = now + REOPEN_PAUSE;
            }
            return;
        }
        if !self.conns[i].up {
            return;
        }
        let piece: &[u8] = match self.spec.kind {
            SlowKind::None => return,
            SlowKind::Header => b"X-Slow: x\r\n",
            SlowKind::Body => b"x",
            SlowKind::Read => return self.read_some(i, now),
        };
        let failed = match self.conns[i].stream.as_mut() {
            Some(s) => s.write(piece).is_err(),
            None => false,
        };
        if failed {
            self.closed(i, now);
        }
    }

    fn open(&mut self, i: usize) -> io::Result<()> {
        let addr = self.spec.addr;
        let sock = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )?;
        if self.spec.kind == SlowKind::Read {
            sock.set_recv_buffer_size(SLOW_READER_RCVBUF)?;
        }
        sock.set_nonblocking(true)?;
        match sock.connect(&addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => return Err(e),
        }
        let mut stream = TcpStream::from_std(sock.into());
        self.poll.registry().register(
            &mut stream,
            Token(i),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        self.conns[i].stream = Some(stream);
        self.conns[i].up = false;
        Ok(())
    }

    /// The connection is up: send what starts its request.
    fn established(&mut self, i: usize, now: Instant) {
        let Some(s) = self.conns[i].stream.as_mut() else {
            return;
        };
        if !matches!(s.take_error(), Ok(None)) {
            // The connect failed (refused): try again after a pause.
            self.report.connect_failures += 1;
            self.drop_conn(i, now);
            return;
        }
        if s.peer_addr().is_err() {
            // Still connecting: a later writable event says when.
            return;
        }
        let host = &self.spec.host;
        let start = match self.spec.kind {
            SlowKind::None => return,
            SlowKind::Header => format!("GET / HTTP/1.1\r\nHost: {host}\r\n"),
            SlowKind::Body => format!(
                "POST /echo HTTP/1.1\r\nHost: {host}\r\nContent-Type: text/plain\r\n\
                 Content-Length: {SLOW_BODY_LENGTH}\r\n\r\n"
            ),
            SlowKind::Read => format!("GET {} HTTP/1.1\r\nHost: {host}\r\n\r\n", self.spec.path),
        };
        if s.write_all(start.as_bytes()).is_err() {
            self.closed(i, now);
            return;
        }
        self.conns[i].up = true;
        self.conns[i].due = now + TRICKLE_EVERY;
        self.report.connected += 1;
    }

    /// Reads what the server sent (a 408, say) without keeping it; EOF or
    /// an error means the server closed the connection. A slow reader
    /// reads only on its trickle.
    fn drain(&mut self, i: usize, now: Instant) {
        if self.spec.kind == SlowKind::Read && self.conns[i].up {
            return;
        }
        let mut buf = [0u8; 4096];
        loop {
            let Some(s) = self.conns[i].stream.as_mut() else {
                return;
            };
            match s.read(&mut buf) {
                Ok(0) => return self.closed(i, now),
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return self.closed(i, now),
            }
        }
    }

    fn read_some(&mut self, i: usize, now: Instant) {
        let mut buf = [0u8; READ_PER_TRICKLE];
        let Some(s) = self.conns[i].stream.as_mut() else {
            return;
        };
        match s.read(&mut buf) {
            Ok(0) => self.closed(i, now),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => self.closed(i, now),
        }
    }

    /// The server ended the connection: open another after a pause.
    fn closed(&mut self, i: usize, now: Instant) {
        if self.conns[i].up {
            self.report.closed_by_server += 1;
        }
        self.drop_conn(i, now);
    }

    fn drop_conn(&mut self, i: usize, now: Instant) {
        if let Some(mut s) = self.conns[i].stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        self.conns[i].up = false;
        self.conns[i].due = now + REOPEN_PAUSE;
    }
}
