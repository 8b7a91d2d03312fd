//! Driving the sans-IO connection (`ServerConn`) without a socket, the way
//! a server does: one driver that the state-machine tests and the fuzz
//! harness share, so both check the same invariants and compare the same
//! event sequences.

use loadlab::http::{BodyLength, Event, Limits, Phase, RequestHead, ServerConn};

/// A small xorshift64* generator: deterministic from its seed, no
/// dependency, and fast enough for hundreds of thousands of cases.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What the connection said, as compared between two ways of feeding the
/// same bytes. Body pieces are merged (how a body is cut into `Data`
/// events depends on the reads), and `NeedData` and `Paused` are left out
/// (how often more data is needed is the very thing that differs).
#[derive(Clone, PartialEq, Eq)]
pub enum Ev {
    Head(Box<RequestHead>),
    Body(Vec<u8>),
    /// The body ended and the request was answered: whether the connection
    /// stays open for another.
    End(bool),
    /// Answered right after its head, before its body was read (as a
    /// handler refusing an upload does): whether the connection stays open.
    Early(bool),
    Error(u16),
    /// All input was consumed and the peer is still there: the phase, and
    /// the status its timeout would be answered with.
    Stall(Phase, Option<u16>),
    Closed,
}

/// Short, so a failure shows the event sequence rather than kilobytes.
impl std::fmt::Debug for Ev {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ev::Head(h) => write!(
                f,
                "Head({} {:.60} {:?} ka={} {:?} expect={})",
                h.method.as_str(),
                h.target(),
                h.version,
                h.keep_alive,
                h.body,
                h.expect_continue
            ),
            Ev::Body(b) => write!(
                f,
                "Body({} bytes: {:?})",
                b.len(),
                String::from_utf8_lossy(&b[..b.len().min(20)])
            ),
            Ev::End(keep) => write!(f, "End(keep={keep})"),
            Ev::Early(keep) => write!(f, "Early(keep={keep})"),
            Ev::Error(s) => write!(f, "Error({s})"),
            Ev::Stall(p, s) => write!(f, "Stall({p:?}, {s:?})"),
            Ev::Closed => write!(f, "Closed"),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Split {
    /// `feed()` with pieces of this many bytes (usize::MAX: all at once).
    Feed(usize),
    /// `read_buf()` + `filled()` with at most this many bytes per read.
    ReadBuf(usize),
    /// `feed()` with pieces of random sizes 1..=max from the seed.
    Random(u64, usize),
}

/// The `Event` kinds, for counting which ones a run produced.
pub const KINDS: [&str; 7] = [
    "Head", "Data", "End", "NeedData", "Paused", "Error", "Closed",
];

/// Every status the protocol core answers with: `next_event` errors, and
/// 408 from `timeout_error` when a request stalls.
pub const STATUSES: [u16; 7] = [400, 408, 413, 414, 431, 501, 505];

/// How the driver answers: always at the end of each request (the plain
/// server), or also in the other ways handlers do, chosen from each
/// request's head so every way of feeding the bytes makes the same choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answers {
    AtEnd,
    Varied,
}

/// One driven connection: its events and how often each kind came.
pub struct Trace {
    pub events: Vec<Ev>,
    pub kinds: [u64; KINDS.len()],
}

/// A stable hash of what a head says, to choose how to answer it.
fn head_hash(h: &RequestHead) -> u64 {
    let mut x: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: &[u8]| {
        for &c in b {
            x = (x ^ c as u64).wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(h.target().as_bytes());
    for (n, v) in h.headers() {
        eat(n.as_bytes());
        eat(v);
    }
    x
}

/// Drives a connection over `input` the way a server does: answer each
/// request at its end (keep-alive unless it asked to close), answer errors,
/// and feed more input only when asked to. Checks the invariants every
/// model relies on along the way; panics with the case on a violation.
pub fn drive(input: &[u8], how: Split, limits: &Limits, answers: Answers) -> Trace {
    let mut conn = ServerConn::new(limits.clone());
    let mut rng = match how {
        Split::Random(seed, _) => Rng::new(seed),
        _ => Rng::new(1),
    };
    let mut pos = 0;
    let mut out = Vec::new();
    let mut t = Trace {
        events: Vec::new(),
        kinds: [0; KINDS.len()],
    };
    let mut errored = false;
    // The current request: its declared length, the body limit in effect,
    // bytes delivered so far, and how to answer it.
    let (mut declared, mut max_body, mut got, mut choice) = (None, limits.max_body, 0u64, 0);
    // Every step either consumes input or moves the state on; anything
    // beyond this bound is a loop.
    let bound = 4 * input.len() + 1000;
    for _ in 0..bound {
        match conn.next_event() {
            Event::Head(h) => {
                t.kinds[0] += 1;
                assert!(!errored, "head after an error");
                got = 0;
                max_body = limits.max_body;
                declared = match h.body {
                    BodyLength::Length(n) => Some(n),
                    _ => None,
                };
                choice = match answers {
                    Answers::AtEnd => 7,
                    Answers::Varied => head_hash(&h) % 8,
                };
                if h.expect_continue {
                    conn.write_continue(&mut out);
                }
                t.events.push(Ev::Head(Box::new(h)));
                match choice {
                    0 => {
                        let keep = conn.write_head(&mut out, 413, 0, b"", false);
                        t.events.push(Ev::Early(keep));
                    }
                    1 => {
                        max_body = 8;
                        conn.set_max_body(max_body);
                    }
                    _ => {}
                }
            }
            Event::Data(d) => {
                t.kinds[1] += 1;
                assert!(!d.is_empty(), "empty Data event");
                got += d.len() as u64;
                assert!(
                    got <= max_body,
                    "{got} body bytes past the limit {max_body}"
                );
                match t.events.last_mut() {
                    Some(Ev::Body(b)) => b.extend_from_slice(d),
                    _ => t.events.push(Ev::Body(d.to_vec())),
                }
            }
            Event::End => {
                t.kinds[2] += 1;
                if let Some(n) = declared {
                    assert_eq!(got, n, "body ended before its Content-Length");
                }
                // A server polls again before it has answered: the next
                // request must wait for the answer.
                assert_eq!(
                    conn.next_event(),
                    Event::Paused,
                    "next request before the answer"
                );
                t.kinds[4] += 1;
                assert!(!conn.wants_read(), "reads while a response is owed");
                let keep = conn.write_head(&mut out, 200, 0, b"", choice == 2);
                t.events.push(Ev::End(keep));
            }
            Event::Paused => panic!("paused although every request was answered"),
            Event::Error(e) => {
                t.kinds[5] += 1;
                assert!(
                    STATUSES.contains(&e.status),
                    "unexpected status {}",
                    e.status
                );
                errored = true;
                t.events.push(Ev::Error(e.status));
                conn.write_error(&mut out, &e);
            }
            Event::Closed => {
                t.kinds[6] += 1;
                t.events.push(Ev::Closed);
                assert_eq!(conn.next_event(), Event::Closed, "Closed is final");
                return t;
            }
            Event::NeedData => {
                t.kinds[3] += 1;
                assert!(
                    !conn.is_eof(),
                    "NeedData after EOF: the connection would hang"
                );
                assert!(conn.wants_read(), "NeedData but does not want to read");
                if pos == input.len() {
                    let timeout = conn.timeout_error().map(|e| e.status);
                    t.events.push(Ev::Stall(conn.phase(), timeout));
                    conn.feed_eof();
                    continue;
                }
                let left = input.len() - pos;
                let n = match how {
                    Split::Feed(n) => {
                        let n = n.min(left);
                        conn.feed(&input[pos..pos + n]);
                        n
                    }
                    Split::Random(_, max) => {
                        let n = (1 + rng.below(max)).min(left);
                        conn.feed(&input[pos..pos + n]);
                        n
                    }
                    Split::ReadBuf(n) => {
                        let buf = conn.read_buf();
                        // An empty read buffer while more input is needed
                        // would read 0 bytes, which a model takes for EOF.
                        assert!(!buf.is_empty(), "NeedData with no room to read");
                        let n = n.min(left).min(buf.len());
                        buf[..n].copy_from_slice(&input[pos..pos + n]);
                        conn.filled(n);
                        n
                    }
                };
                pos += n;
            }
        }
    }
    panic!("no end after {bound} steps: {:?}", t.events);
}
