//! The load engine: each thread runs one mio event loop over its share of
//! preallocated connections (wrk's shape). Request bytes are built once;
//! every measurement goes into the thread's own `Stats`, merged after join.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use mio::net::TcpStream;
use mio::{Events, Poll, Token};

use super::records::Records;
use super::schedule::Slots;
use super::send_timer::SendTimer;
use super::stats::Stats;
use crate::http::client::ResponseParser;
use crate::net::tls::TlsClient;

mod conn_io;
pub mod dial;
mod tls_io;
mod tunnel;
pub mod verbose;

/// How often timeouts are checked and the stop flag is read.
const TICK: Duration = Duration::from_millis(50);
/// Per-thread read buffer; responses are counted, never kept.
const READ_BUF: usize = 64 * 1024;
/// `Shared::doc_length` before the first measured response arrives.
pub const NO_LENGTH: u64 = u64::MAX;
/// Open-loop slots missed at the time limit are recorded in at most this
/// many histogram entries (evenly spread groups), so a huge rate cannot
/// turn the end of a run into a long loop.
const MAX_MISSED_RECORDS: u64 = 100_000;
/// The open-loop send timer's token; connection tokens are their indices.
const TIMER: Token = Token(usize::MAX - 1);

/// What one thread is asked to do.
#[derive(Debug, Clone)]
pub struct ThreadPlan {
    pub connections: usize,
    /// Requests this thread must complete (None: until the deadline).
    pub requests: Option<u64>,
    /// Open loop: this thread's slots of the run's schedule.
    pub rate: Option<Slots>,
    /// Per-request records this thread keeps at most (0: none kept).
    pub record_cap: usize,
}

/// Settings shared by all threads: read-only, except the document-length
/// baseline, which is set once by whichever thread sees the first response.
#[derive(Debug)]
pub struct Shared {
    /// Where sockets connect: the server, or the proxy (-X).
    pub addr: SocketAddr,
    /// How sockets are opened (-B, -b).
    pub dial: dial::Dial,
    /// https through a proxy: the CONNECT request each new connection
    /// sends before its handshake.
    pub tunnel: Option<Bytes>,
    /// -v's troubleshooting lines.
    pub log: verbose::Log,
    /// https: every connection's TLS session comes from here.
    pub tls: Option<TlsClient>,
    pub request: Bytes,
    /// The request carries a body (-p/-u): whole requests then count as
    /// sent bytes, which is what ab's "Total body sent" adds up.
    pub sends_body: bool,
    pub head_request: bool,
    pub keep_alive: bool,
    pub timeout: Duration,
    pub variable_length: bool,
    /// `--strict`: an answer that broke a rule fails (else it counts, with
    /// a violation).
    pub strict: bool,
    /// The run (warm-up included) starts here; the open-loop warm-up
    /// schedule counts from it.
    pub run_start: Instant,
    /// Measuring starts here (after warm-up); earlier requests are not counted.
    pub measure_start: Instant,
    /// No request starts after this instant.
    pub deadline: Option<Instant>,
    /// The series' last second (whole seconds since `measure_start`):
    /// that of the deadline with a time limit, unbounded without.
    pub last_second: u64,
    /// Set by Ctrl-C handling or the caller to end the run early.
    pub stop: AtomicBool,
    /// Body length of the run's first measured response (ab's Document
    /// Length), which every later response is held to; `NO_LENGTH` until
    /// then. Each thread touches it once, at its own first response (a
    /// compare-exchange that sets it or learns it), then keeps a copy.
    pub doc_length: AtomicU64,
}

/// What a load thread tells others: the requests it has finished and
/// failed and their latency (read by the progress display while it runs)
/// and, when it ends, the CPU time it used (a lab tells from it whether
/// the client, not the server, set the rate).
/// Padded so threads bumping their own counter do not share a cache line.
#[repr(align(64))]
#[derive(Debug, Default)]
pub struct ThreadCounters {
    pub done: AtomicU64,
    /// Failed requests so far (the live display's errors).
    pub failed: AtomicU64,
    /// Sum of the finished requests' total latencies, µs (the live
    /// display's mean latency over its last interval).
    pub latency_us: AtomicU64,
    pub cpu_ns: AtomicU64,
    /// Time the thread was ready to run but waited for a CPU (0 where
    /// the kernel does not say).
    pub wait_ns: AtomicU64,
    /// When the thread sent its first measured request (open loop: less
    /// that slot's offset in the schedule), in nanoseconds after the run's
    /// start plus one (0: none yet); the earliest over the threads is the
    /// run's actual start, which shards compare.
    pub first_send_ns: AtomicU64,
}

/// Nanoseconds the calling thread has waited on a run queue, from the
/// second field of its schedstat.
fn thread_wait_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|t| t.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// CPU time the calling thread has used since it started, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        if libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) != 0 {
            return 0;
        }
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No request in progress.
    Free,
    /// Waiting for the scheduled send time (open loop).
    Parked,
    Connecting,
    /// TCP is up to a proxy; waiting for its answer to CONNECT.
    Tunneling,
    /// TCP is up; the TLS handshake is under way (part of Connect time).
    Handshaking,
    Sending(usize),
    Receiving,
}

struct LoadConn {
    stream: Option<TcpStream>,
    /// The TLS session over `stream` (https only); boxed, since a
    /// rustls connection is large and plain runs keep a None.
    tls: Option<Box<rustls::ClientConnection>>,
    phase: Phase,
    parser: ResponseParser,
    /// This request rides on a connection that served an earlier one.
    reused: bool,
    /// The socket is polled for WRITABLE as well as READABLE.
    writable: bool,
    /// Counted toward -n and recorded (false during warm-up).
    counted: bool,
    t_start: Instant,
    t_intended: Instant,
    t_connected: Instant,
    t_sent: Instant,
    t_first: Option<Instant>,
    /// The request last made progress here (started, connected, or moved
    /// bytes either way): `-s` is ab's per-socket inactivity timeout,
    /// measured from this, not a deadline for the whole response.
    t_active: Instant,
    /// The proxy's answer to CONNECT as it arrives (-X with https).
    tunnel_reply: Vec<u8>,
    /// -v: the response head as it arrives, until logged.
    head_log: verbose::HeadLog,
}

/// One thread's run.
pub struct Worker<'a> {
    shared: &'a Shared,
    plan: ThreadPlan,
    poll: Poll,
    conns: Vec<LoadConn>,
    stats: Stats,
    /// Per-request records (`--per-request`, `-g`); off unless asked for.
    records: Records,
    progress: &'a ThreadCounters,
    /// Counted requests given a slot so far (begun, or parked until their
    /// open-loop send time).
    started: u64,
    /// Open loop: warm-up slots used so far, and how many there are.
    warm_slots: u64,
    warm_total: u64,
    /// Counted requests finished so far.
    finished: u64,
    /// Sum of answered requests' total latencies (µs), published to
    /// `progress.latency_us` for the live display.
    latency_sum_us: u64,
    buf: Vec<u8>,
    parked: std::collections::VecDeque<usize>,
    /// Open loop: wakes the loop at the first parked request's send time.
    timer: Option<SendTimer>,
    /// Connections that finished a request and need the next one. Going
    /// through this list instead of calling back keeps the stack flat when
    /// requests finish (or fail to connect) immediately, one after another.
    restart: Vec<usize>,
    /// The run ended because the time limit passed.
    hit_deadline: bool,
    /// When the batch of readiness events being handled was reported: the
    /// arrival time of every response in it. Data that wakes the loop was
    /// there by then, and one clock read per batch instead of two per
    /// response is measurable at 100k requests/s.
    woke: Instant,
    /// `--strict`: the violations of the answer being completed, which
    /// make it a failed request.
    strict_kinds: Vec<&'static str>,
}

impl<'a> Worker<'a> {
    pub fn new(
        shared: &'a Shared,
        plan: ThreadPlan,
        progress: &'a ThreadCounters,
    ) -> io::Result<Self> {
        let now = Instant::now();
        let conns = (0..plan.connections)
            .map(|_| LoadConn {
                stream: None,
                tls: None,
                phase: Phase::Free,
                parser: ResponseParser::new(shared.head_request),
                reused: false,
                writable: false,
                counted: false,
                t_start: now,
                t_intended: now,
                t_connected: now,
                t_sent: now,
                t_first: None,
                t_active: now,
                tunnel_reply: Vec::new(),
                head_log: verbose::HeadLog::default(),
            })
            .collect();
        let open_loop = plan.rate.is_some();
        let warm_total = plan.rate.map_or(0, |slots| {
            slots.before(shared.run_start, shared.measure_start)
        });
        let records = Records::with_cap(plan.record_cap, plan.requests);
        let poll = Poll::new()?;
        let timer = if open_loop {
            Some(SendTimer::new(poll.registry(), TIMER)?)
        } else {
            None
        };
        Ok(Worker {
            shared,
            plan,
            poll,
            conns,
            stats: Stats::new(open_loop),
            records,
            progress,
            started: 0,
            warm_slots: 0,
            warm_total,
            finished: 0,
            latency_sum_us: 0,
            buf: vec![0; READ_BUF],
            parked: std::collections::VecDeque::new(),
            timer,
            restart: Vec::new(),
            hit_deadline: false,
            woke: now,
            strict_kinds: Vec::new(),
        })
    }

    /// Runs until the plan is done, the deadline passes or stop is set;
    /// returns what it measured and the per-request records it kept.
    pub fn run(mut self) -> (Stats, Records) {
        // --start-at: everything is set up; wait for the run's start.
        while !self.shared.stop.load(Ordering::Relaxed) {
            let left = self
                .shared
                .run_start
                .saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(TICK));
        }
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
            let now = Instant::now();
            self.woke = now;
            for ev in events.iter() {
                match ev.token() {
                    TIMER => {
                        if let Some(timer) = self.timer.as_mut() {
                            timer.fired();
                        }
                    }
                    t => self.on_ready(t.0, ev),
                }
            }
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
        self.stats.in_flight_at_end = self.conns.iter().filter(|c| c.in_flight()).count() as u64;
        // The thread's whole life: it was started for this run.
        self.progress
            .cpu_ns
            .store(thread_cpu_ns(), Ordering::Relaxed);
        self.progress
            .wait_ns
            .store(thread_wait_ns(), Ordering::Relaxed);
        self.stats.hit_deadline = self.hit_deadline;
        if let (true, Some(rate), Some(deadline)) =
            (self.hit_deadline, self.plan.rate, self.shared.deadline)
        {
            self.account_unfinished(rate, deadline);
        }
        (self.stats, self.records)
    }

    /// Open loop, ended by the time limit: every slot due before it is
    /// accounted for. Slots that never got a connection are counted as
    /// missed; they and the requests still in flight enter the corrected
    /// histogram as waiting until the end (a lower bound on their latency),
    /// so a stalled server cannot make its backlog vanish from the tail.
    fn account_unfinished(&mut self, slots: Slots, deadline: Instant) {
        let origin = self.shared.measure_start;
        let mut due = slots.before(origin, deadline);
        if let Some(n) = self.plan.requests {
            due = due.min(n);
        }
        let us = |at: Instant| deadline.saturating_duration_since(at).as_micros() as u64;
        // Slots never handed out: a contiguous range of the schedule.
        let never = due.saturating_sub(self.started);
        let mut corrected = self.stats.latency.corrected.as_mut();
        let mut parked = 0;
        for c in &self.conns {
            // A slot handed out but still waiting for its send time.
            let missed = c.counted && c.phase == Phase::Parked && c.t_intended < deadline;
            parked += u64::from(missed);
            if let Some(h) = corrected.as_mut().filter(|_| missed || c.in_flight()) {
                h.saturating_record(us(c.t_intended));
            }
        }
        self.stats.missed = parked + never;
        let Some(h) = corrected else {
            return;
        };
        let group = never.div_ceil(MAX_MISSED_RECORDS).max(1);
        let mut k = self.started;
        while k < due {
            let n = group.min(due - k);
            h.saturating_record_n(us(slots.at(origin, k + n / 2)), n);
            k += n;
        }
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

    /// How long the next poll may sleep. A parked request's send time is
    /// kept by the send timer, since the poll timeout is only good to the
    /// millisecond; the timeout itself stays as a backstop.
    fn poll_timeout(&mut self) -> Duration {
        if !self.restart.is_empty() {
            return Duration::ZERO;
        }
        let mut t = TICK;
        if let Some(&i) = self.parked.front() {
            let now = Instant::now();
            let at = self.conns[i].t_intended;
            let wait = at.saturating_duration_since(now);
            match self.timer.as_mut().map(|timer| timer.arm(at, now)) {
                Some(Ok(())) => t = t.min(wait + Duration::from_millis(1)),
                Some(Err(_)) | None => t = t.min(wait),
            }
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
        let (counted, intended) = match self.plan.rate {
            Some(rate) => match self.next_slot(rate) {
                Some(slot) => slot,
                None => return self.close(i),
            },
            None => {
                let counted = now >= self.shared.measure_start;
                if counted {
                    if !self.budget_left() {
                        return self.close(i);
                    }
                    self.started += 1;
                }
                (counted, now)
            }
        };
        if intended > now {
            // The slot is reserved now so the schedule stays exact.
            let c = &mut self.conns[i];
            c.counted = counted;
            c.t_intended = intended;
            c.phase = Phase::Parked;
            self.parked.push_back(i);
            return;
        }
        self.begin(i, counted, intended, now);
    }

    /// The next open-loop slot: whether it is measured, and its send time.
    /// Warm-up runs on the same schedule from the start of the run (a
    /// server warmed up flat out would be in another state than the rate
    /// asks for); measured slots count from `measure_start`. None when the
    /// measured budget (-n) is spent.
    fn next_slot(&mut self, slots: Slots) -> Option<(bool, Instant)> {
        if self.warm_slots < self.warm_total {
            let at = slots.at(self.shared.run_start, self.warm_slots);
            self.warm_slots += 1;
            return Some((false, at));
        }
        if !self.budget_left() {
            return None;
        }
        let at = slots.at(self.shared.measure_start, self.started);
        self.started += 1;
        Some((true, at))
    }

    fn wake_parked(&mut self, now: Instant) {
        while let Some(&i) = self.parked.front() {
            if self.conns[i].t_intended > now {
                break;
            }
            self.parked.pop_front();
            let (counted, intended) = (self.conns[i].counted, self.conns[i].t_intended);
            self.begin(i, counted, intended, now);
        }
    }

    /// Starts a request on connection `i` now.
    fn begin(&mut self, i: usize, counted: bool, intended: Instant, now: Instant) {
        if counted && self.progress.first_send_ns.load(Ordering::Relaxed) == 0 {
            // Open loop, the slot's place in the schedule (a later shard's
            // first slot is later by design) is not lateness.
            let at = match self.plan.rate {
                Some(_) => now - intended.saturating_duration_since(self.shared.measure_start),
                None => now,
            };
            let ns = at
                .saturating_duration_since(self.shared.run_start)
                .as_nanos();
            let ns = u64::try_from(ns).unwrap_or(u64::MAX - 1) + 1;
            self.progress.first_send_ns.store(ns, Ordering::Relaxed);
        }
        let c = &mut self.conns[i];
        c.counted = counted;
        c.t_intended = intended;
        c.t_start = now;
        c.t_active = now;
        c.t_first = None;
        c.parser.reset();
        if self.shared.log.on() {
            c.head_log.reset();
        }
        if c.stream.is_some() && self.shared.keep_alive {
            c.reused = true;
            c.t_connected = now;
            c.phase = Phase::Sending(0);
            self.send(i);
            return;
        }
        self.reconnect(i);
    }
}

impl LoadConn {
    /// A measured request is on the wire (not waiting for its slot).
    fn in_flight(&self) -> bool {
        self.counted && !matches!(self.phase, Phase::Free | Phase::Parked)
    }
}

/// Errors that mean the peer closed or reset the connection.
fn is_peer_close(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted
    )
}

#[derive(Debug, Clone, Copy)]
enum Failure {
    Connect,
    Receive,
    Exception,
    Timeout,
}
