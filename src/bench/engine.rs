//! The load engine: each thread runs one mio event loop over its share of
//! preallocated connections (wrk's shape). Request bytes are built once;
//! every measurement goes into the thread's own `Stats`, merged after join.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use super::stats::Stats;
use crate::http::client::{ResponseError, ResponseParser};

/// How often timeouts are checked and the stop flag is read.
const TICK: Duration = Duration::from_millis(50);
/// Per-thread read buffer; responses are counted, never kept.
const READ_BUF: usize = 64 * 1024;

/// What one thread is asked to do.
#[derive(Debug, Clone)]
pub struct ThreadPlan {
    pub connections: usize,
    /// Requests this thread must complete (None: until the deadline).
    pub requests: Option<u64>,
    /// Open loop: this thread's share of the rate, requests per second.
    pub rate: Option<f64>,
}

/// Settings shared read-only by all threads.
#[derive(Debug)]
pub struct Shared {
    pub addr: SocketAddr,
    pub request: Bytes,
    pub body_len: u64,
    pub head_request: bool,
    pub keep_alive: bool,
    pub timeout: Duration,
    pub variable_length: bool,
    /// Measuring starts here (after warm-up); earlier requests are not counted.
    pub measure_start: Instant,
    /// No request starts after this instant.
    pub deadline: Option<Instant>,
    /// Set by Ctrl-C handling or the caller to end the run early.
    pub stop: AtomicBool,
}

/// Padded so threads bumping their own counter do not share a cache line.
#[repr(align(64))]
#[derive(Debug, Default)]
pub struct Progress(pub AtomicU64);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No request in progress.
    Free,
    /// Waiting for the scheduled send time (open loop).
    Parked,
    Connecting,
    Sending(usize),
    Receiving,
}

struct Conn {
    stream: Option<TcpStream>,
    phase: Phase,
    parser: ResponseParser,
    /// This request rides on a connection that served an earlier one.
    reused: bool,
    /// Counted toward -n and recorded (false during warm-up).
    counted: bool,
    t_start: Instant,
    t_intended: Instant,
    t_connected: Instant,
    t_sent: Instant,
    t_first: Option<Instant>,
}

/// One thread's run.
pub struct Worker<'a> {
    shared: &'a Shared,
    plan: ThreadPlan,
    poll: Poll,
    conns: Vec<Conn>,
    stats: Stats,
    progress: &'a Progress,
    /// Counted requests started so far.
    started: u64,
    /// Counted requests finished so far.
    finished: u64,
    buf: Vec<u8>,
    parked: std::collections::VecDeque<usize>,
    /// Connections that finished a request and need the next one. Going
    /// through this list instead of calling back keeps the stack flat when
    /// requests finish (or fail to connect) immediately, one after another.
    restart: Vec<usize>,
    first_length: Option<u64>,
    /// The run ended because the time limit passed.
    hit_deadline: bool,
}

impl<'a> Worker<'a> {
    pub fn new(shared: &'a Shared, plan: ThreadPlan, progress: &'a Progress) -> io::Result<Self> {
        let now = Instant::now();
        let conns = (0..plan.connections)
            .map(|_| Conn {
                stream: None,
                phase: Phase::Free,
                parser: ResponseParser::new(shared.head_request),
                reused: false,
                counted: false,
                t_start: now,
                t_intended: now,
                t_connected: now,
                t_sent: now,
                t_first: None,
            })
            .collect();
        let open_loop = plan.rate.is_some();
        Ok(Worker {
            shared,
            plan,
            poll: Poll::new()?,
            conns,
            stats: Stats::new(open_loop),
            progress,
            started: 0,
            finished: 0,
            buf: vec![0; READ_BUF],
            parked: std::collections::VecDeque::new(),
            restart: Vec::new(),
            first_length: None,
            hit_deadline: false,
        })
    }

    /// Runs until the plan is done, the deadline passes or stop is set.
    pub fn run(mut self) -> Stats {
        if let Some(c) = self.conns.first_mut() {
            c.parser.capture_server(true);
        }
        self.restart.extend((0..self.conns.len()).rev());
        let mut events = Events::with_capacity(1024);
        let mut last_check = Instant::now();
        loop {
            // One batch per round: a connection whose responses come back
            // at once is requeued for the next round, after the others.
            for i in std::mem::take(&mut self.restart) {
                self.next_request(i);
            }
            if self.done() {
                break;
            }
            let timeout = self.poll_timeout();
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.stats.error(format!("poll: {e}"));
                    break;
                }
            }
            for ev in events.iter() {
                self.on_ready(ev.token().0);
            }
            let now = Instant::now();
            if self.past_deadline(now) || self.shared.stop.load(Ordering::Relaxed) {
                self.hit_deadline = self.past_deadline(now);
                break;
            }
            self.wake_parked(now);
            if now.duration_since(last_check) >= TICK {
                last_check = now;
                self.check_timeouts(now);
            }
        }
        self.stats.in_flight_at_end = self
            .conns
            .iter()
            .filter(|c| c.counted && !matches!(c.phase, Phase::Free | Phase::Parked))
            .count() as u64;
        self.stats.hit_deadline = self.hit_deadline;
        self.stats
    }

    fn done(&self) -> bool {
        match self.plan.requests {
            Some(n) => self.finished >= n,
            None => false,
        }
    }

    fn past_deadline(&self, now: Instant) -> bool {
        self.shared.deadline.is_some_and(|d| now >= d)
    }

    fn poll_timeout(&self) -> Duration {
        if !self.restart.is_empty() {
            return Duration::ZERO;
        }
        let mut t = TICK;
        if let Some(&i) = self.parked.front() {
            let wait = self.conns[i]
                .t_intended
                .saturating_duration_since(Instant::now());
            t = t.min(wait);
        }
        t
    }

    /// Whether another counted request may start.
    fn budget_left(&self) -> bool {
        self.plan.requests.map_or(true, |n| self.started < n)
    }

    /// Gives connection `i` its next request, or leaves it free.
    fn next_request(&mut self, i: usize) {
        let now = Instant::now();
        if self.shared.stop.load(Ordering::Relaxed) || self.past_deadline(now) {
            self.close(i);
            return;
        }
        let counted = now >= self.shared.measure_start;
        if counted && !self.budget_left() {
            self.close(i);
            return;
        }
        let intended = match (self.plan.rate, counted) {
            (Some(rate), true) => {
                let at =
                    self.shared.measure_start + Duration::from_secs_f64(self.started as f64 / rate);
                if at > now {
                    // Reserve the slot now so the schedule stays exact.
                    self.started += 1;
                    let c = &mut self.conns[i];
                    c.counted = true;
                    c.t_intended = at;
                    c.phase = Phase::Parked;
                    self.parked.push_back(i);
                    return;
                }
                at
            }
            _ => now,
        };
        if counted {
            self.started += 1;
        }
        self.begin(i, counted, intended, now);
    }

    fn wake_parked(&mut self, now: Instant) {
        while let Some(&i) = self.parked.front() {
            if self.conns[i].t_intended > now {
                break;
            }
            self.parked.pop_front();
            let intended = self.conns[i].t_intended;
            self.begin(i, true, intended, now);
        }
    }

    /// Starts a request on connection `i` now.
    fn begin(&mut self, i: usize, counted: bool, intended: Instant, now: Instant) {
        let c = &mut self.conns[i];
        c.counted = counted;
        c.t_intended = intended;
        c.t_start = now;
        c.t_first = None;
        c.parser.reset();
        if c.stream.is_some() && self.shared.keep_alive {
            c.reused = true;
            c.t_connected = now;
            c.phase = Phase::Sending(0);
            self.send(i);
            return;
        }
        c.reused = false;
        self.close_socket(i);
        match TcpStream::connect(self.shared.addr) {
            Ok(mut s) => {
                let _ = s.set_nodelay(true);
                match self.poll.registry().register(
                    &mut s,
                    Token(i),
                    Interest::READABLE | Interest::WRITABLE,
                ) {
                    Ok(()) => {
                        let c = &mut self.conns[i];
                        c.stream = Some(s);
                        c.phase = Phase::Connecting;
                    }
                    Err(e) => self.fail(i, Failure::Connect, format!("connect: {e}")),
                }
            }
            Err(e) => self.fail(i, Failure::Connect, format!("connect: {e}")),
        }
    }

    fn on_ready(&mut self, i: usize) {
        match self.conns[i].phase {
            Phase::Connecting => self.on_connect(i),
            Phase::Sending(_) => self.send(i),
            Phase::Receiving => self.receive(i),
            Phase::Free | Phase::Parked => {}
        }
    }

    fn on_connect(&mut self, i: usize) {
        let Some(s) = self.conns[i].stream.as_ref() else {
            return;
        };
        match s.take_error() {
            Ok(Some(e)) | Err(e) => return self.fail(i, Failure::Connect, format!("connect: {e}")),
            Ok(None) => {}
        }
        match s.peer_addr() {
            Ok(_) => {}
            // Not connected yet: a spurious wake-up; wait for the next edge.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
            Err(e) => return self.fail(i, Failure::Connect, format!("connect: {e}")),
        }
        let c = &mut self.conns[i];
        c.t_connected = Instant::now();
        c.phase = Phase::Sending(0);
        self.send(i);
    }

    fn send(&mut self, i: usize) {
        let req = &self.shared.request;
        let c = &mut self.conns[i];
        let Phase::Sending(mut off) = c.phase else {
            return;
        };
        let Some(s) = c.stream.as_mut() else { return };
        while off < req.len() {
            match s.write(&req[off..]) {
                Ok(0) => return self.fail(i, Failure::Exception, "send: connection closed".into()),
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    c.phase = Phase::Sending(off);
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail(i, Failure::Exception, format!("send: {e}")),
            }
        }
        c.t_sent = Instant::now();
        // No read here: the response cannot have arrived in the microsecond
        // since the write, and its arrival raises an edge of its own. A
        // speculative read would cost one failing syscall per request.
        c.phase = Phase::Receiving;
    }

    fn receive(&mut self, i: usize) {
        loop {
            let c = &mut self.conns[i];
            let Some(s) = c.stream.as_mut() else { return };
            let n = match s.read(&mut self.buf) {
                Ok(0) => {
                    return match c.parser.feed_eof() {
                        Ok(Some(info)) => self.complete(i, info, false),
                        Ok(None) => self.fail(
                            i,
                            Failure::Receive,
                            "receive: connection closed before the response".into(),
                        ),
                        Err(e) => self.fail(i, Failure::Receive, format!("receive: {e}")),
                    };
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.fail(i, Failure::Receive, format!("receive: {e}")),
            };
            if c.t_first.is_none() {
                c.t_first = Some(Instant::now());
            }
            let mut off = 0;
            while off < n {
                match c.parser.feed(&self.buf[off..n]) {
                    Ok((used, Some(info))) => {
                        // Bytes after a complete response were not asked
                        // for; they are dropped with the connection.
                        let extra = off + used < n;
                        return self.complete(i, info, !extra);
                    }
                    Ok((used, None)) => off += used,
                    Err(e) => {
                        let kind = match e {
                            ResponseError::Incomplete => Failure::Receive,
                            _ => Failure::Exception,
                        };
                        return self.fail(i, kind, format!("response: {e}"));
                    }
                }
            }
        }
    }

    fn complete(&mut self, i: usize, info: crate::http::client::ResponseInfo, reusable: bool) {
        let now = Instant::now();
        let c = &mut self.conns[i];
        c.phase = Phase::Free;
        let keep = reusable && self.shared.keep_alive && info.keep_alive;
        if c.counted {
            let st = &mut self.stats;
            let us = |d: Duration| d.as_micros() as u64;
            let total = us(now - c.t_start);
            let connect = if c.reused {
                0
            } else {
                us(c.t_connected - c.t_start)
            };
            let waiting = c
                .t_first
                .map_or(0, |f| us(f.saturating_duration_since(c.t_sent)));
            st.latency.total.saturating_record(total);
            st.latency.connect.saturating_record(connect);
            st.latency.waiting.saturating_record(waiting);
            st.latency
                .processing
                .saturating_record(total.saturating_sub(connect));
            if let Some(h) = st.latency.corrected.as_mut() {
                h.saturating_record(us(now - c.t_intended));
            }
            st.complete += 1;
            let class = (info.status / 100) as usize;
            st.status_classes[if (1..=5).contains(&class) { class } else { 0 }] += 1;
            if !(200..300).contains(&info.status) {
                st.non_2xx += 1;
            }
            if self.shared.keep_alive && info.keep_alive {
                st.keep_alive_requests += 1;
            }
            st.total_bytes += info.head_bytes + info.wire_body_bytes;
            st.html_bytes += info.body_bytes;
            st.body_sent += self.shared.body_len;
            if info.server.is_some() && st.server_software.is_none() {
                st.server_software = info.server;
            }
            match self.first_length {
                None => {
                    self.first_length = Some(info.body_bytes);
                    st.document_length = Some(info.body_bytes);
                }
                Some(len) if len != info.body_bytes => {
                    st.variable_length = true;
                    if !self.shared.variable_length {
                        st.failures.length += 1;
                    }
                }
                _ => {}
            }
            self.finished += 1;
            self.progress.0.fetch_add(1, Ordering::Relaxed);
        }
        if !keep {
            self.close_socket(i);
        }
        self.restart.push(i);
    }

    fn fail(&mut self, i: usize, kind: Failure, msg: String) {
        let c = &mut self.conns[i];
        c.phase = Phase::Free;
        if c.counted {
            let st = &mut self.stats;
            st.complete += 1;
            match kind {
                Failure::Connect => st.failures.connect += 1,
                Failure::Receive => st.failures.receive += 1,
                Failure::Exception => st.failures.exceptions += 1,
                Failure::Timeout => {
                    st.failures.exceptions += 1;
                    st.timeouts += 1;
                }
            }
            st.error(msg);
            self.finished += 1;
            self.progress.0.fetch_add(1, Ordering::Relaxed);
        }
        self.close_socket(i);
        self.restart.push(i);
    }

    fn check_timeouts(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            let busy = matches!(
                c.phase,
                Phase::Connecting | Phase::Sending(_) | Phase::Receiving
            );
            if busy && now.duration_since(c.t_start) >= self.shared.timeout {
                self.fail(i, Failure::Timeout, "timeout".into());
            }
        }
    }

    fn close_socket(&mut self, i: usize) {
        if let Some(mut s) = self.conns[i].stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
    }

    fn close(&mut self, i: usize) {
        self.close_socket(i);
        self.conns[i].phase = Phase::Free;
    }
}

#[derive(Debug, Clone, Copy)]
enum Failure {
    Connect,
    Receive,
    Exception,
    Timeout,
}
