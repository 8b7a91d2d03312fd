//! The sans-IO connection state machine, without any socket: the same bytes
//! fed whole, one byte at a time, or in random pieces (through `feed` and
//! through `read_buf`/`filled`, as the models do) give the same events.
//! Random and mutated requests are tests/fuzz.rs's.

use crate::common;

use common::sansio::{self, Answers, Ev, Split};
use loadlab::http::{Event, Limits, ServerConn};

fn limits() -> Limits {
    Limits {
        max_body: 100_000,
        ..Limits::default()
    }
}

/// Drives a connection over `input`, answering each request at its end.
fn drive(input: &[u8], how: Split) -> Vec<Ev> {
    sansio::drive(input, how, &limits(), Answers::AtEnd).events
}

/// Runs every way of feeding and checks they agree.
fn same_events(input: &[u8]) -> Vec<Ev> {
    let whole = drive(input, Split::Feed(usize::MAX));
    for how in [
        Split::Feed(1),
        Split::ReadBuf(1),
        Split::ReadBuf(usize::MAX),
        Split::ReadBuf(7),
        Split::Random(input.len() as u64, 64),
    ] {
        let got = drive(input, how);
        assert_eq!(
            got,
            whole,
            "{how:?} differs from whole for {:?}",
            String::from_utf8_lossy(&input[..input.len().min(300)])
        );
    }
    whole
}

fn statuses(evs: &[Ev]) -> Vec<String> {
    evs.iter()
        .map(|e| match e {
            Ev::Head(h) => format!("head {} {}", h.method.as_str(), h.target()),
            Ev::Body(b) => format!("body {}", String::from_utf8_lossy(b)),
            Ev::End(_) => "end".into(),
            Ev::Early(_) => "early answer".into(),
            Ev::Error(s) => format!("error {s}"),
            Ev::Closed => "closed".into(),
            // Where the input ran out is not a result of the request.
            Ev::Stall(..) => String::new(),
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// Requests every server must accept, alone and pipelined.
fn valid_corpus() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = [
        &b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"[..],
        b"GET /x?y=1 HTTP/1.0\r\n\r\n",
        b"GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        b"HEAD /500B.html HTTP/1.1\r\nHost: a\r\nAccept: */*\r\nUser-Agent: t\r\n\r\n",
        b"GET http://example.com/a HTTP/1.1\r\nHost: example.com\r\n\r\n",
        b"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"\n\nGET / HTTP/1.1\nHost: a\n\n",
        b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
        b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello",
        b"POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi",
        b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n6 ; x\r\n world\r\n0\r\nX-T: 1\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"PUT /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: CHUNKED\r\n\r\nA\r\n0123456789\r\n0;e\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\nHost: a\r\n\r\n",
        b"DELETE /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
    ]
    .iter()
    .map(|r| r.to_vec())
    .collect();
    // 8,000 and 8,192 octet request lines.
    for len in [8000, 8192] {
        let mut line = b"GET /".to_vec();
        line.resize(len - b" HTTP/1.1".len(), b'a');
        line.extend_from_slice(b" HTTP/1.1\r\nHost: a\r\n\r\n");
        v.push(line);
    }
    // 100 fields, and a section just under 64 KiB.
    let mut many = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    for i in 1..100 {
        many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    v.push(many);
    let mut big = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    for i in 0..10 {
        big.extend_from_slice(format!("X-{i}: {}\r\n", "v".repeat(6000)).as_bytes());
    }
    big.extend_from_slice(b"\r\n");
    v.push(big);
    // The largest header section allowed (64 KiB from the request line's
    // LF to the head's end).
    v.push(head_of_size(HEAD_MAX));
    // A body bigger than the read buffer.
    let mut body = b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 70000\r\n\r\n".to_vec();
    body.extend((0..70000).map(|i| b'a' + (i % 26) as u8));
    v.push(body);
    // Pipelines of everything short so far.
    let short: Vec<Vec<u8>> = v
        .iter()
        .filter(|r| r.len() < 500 && !r.windows(6).any(|w| w == b"close\r"))
        .cloned()
        .collect();
    v.push(short.concat());
    v.push(short.iter().rev().flatten().copied().collect());
    v
}

/// The longest head whose header section fits: `GET / HTTP/1.1` ends with
/// its LF at index 15, and the head may end 64 KiB past that.
const HEAD_MAX: usize = 15 + 64 * 1024;

/// A GET of `len` bytes, all of it head: Host and one long field.
fn head_of_size(len: usize) -> Vec<u8> {
    let mut head = b"GET / HTTP/1.1\r\nHost: a\r\nX: ".to_vec();
    head.resize(len - 4, b'v');
    head.extend_from_slice(b"\r\n\r\n");
    head
}

/// Requests that must be refused, with the status.
fn invalid_corpus() -> Vec<(Vec<u8>, u16)> {
    let mut v: Vec<(Vec<u8>, u16)> = [
        (&b"GET / HTTP/1.1\r\n\r\n"[..], 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX(: a\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\0\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", 400),
        (b"\rGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        (b"\r\rGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nshort", 400),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100001\r\n\r\n", 413),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: foo\r\n\r\n", 501),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
        (b"FOO / HTTP/1.1\r\nHost: a\r\n\r\n", 501),
        (b"get / HTTP/1.1\r\nHost: a\r\n\r\n", 501),
        (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
        (b"GET / HTTP/1.1\r\nHost: a\rB: c\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
        (b"GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\n\r\n", 400),
    ]
    .iter()
    .map(|(r, s)| (r.to_vec(), *s))
    .collect();
    let mut long = b"GET /".to_vec();
    long.resize(8193 - b" HTTP/1.1".len(), b'a');
    long.extend_from_slice(b" HTTP/1.1\r\nHost: a\r\n\r\n");
    v.push((long, 414));
    v.push((vec![b'a'; 20_000], 414));
    let mut many = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    for i in 1..101 {
        many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    v.push((many, 431));
    let mut huge = b"GET / HTTP/1.1\r\nHost: a\r\nX: ".to_vec();
    huge.resize(70_000, b'v');
    v.push((huge.clone(), 431));
    huge.extend_from_slice(b"\r\n\r\n");
    v.push((huge, 431));
    v.push((head_of_size(HEAD_MAX + 1), 431));
    let mut body = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..30 {
        body.extend_from_slice(format!("1000\r\n{}\r\n", "x".repeat(4096)).as_bytes());
    }
    v.push((body, 413));
    v
}

#[test]
fn valid_requests_give_the_same_events_however_split() {
    for req in valid_corpus() {
        let evs = same_events(&req);
        assert!(
            !evs.iter().any(|e| matches!(e, Ev::Error(_))),
            "valid request refused: {:?} -> {:?}",
            String::from_utf8_lossy(&req[..req.len().min(200)]),
            statuses(&evs)
        );
        assert_eq!(evs.last(), Some(&Ev::Closed));
    }
}

#[test]
fn invalid_requests_give_the_same_error_however_split() {
    for (req, status) in invalid_corpus() {
        let evs = same_events(&req);
        let err = evs.iter().find_map(|e| match e {
            Ev::Error(s) => Some(*s),
            _ => None,
        });
        assert_eq!(
            err,
            Some(status),
            "{:?} -> {:?}",
            String::from_utf8_lossy(&req[..req.len().min(200)]),
            statuses(&evs)
        );
        // Nothing is decoded after an error.
        assert_eq!(evs[evs.len() - 2..], [Ev::Error(status), Ev::Closed]);
    }
}

#[test]
fn pipelined_requests_come_out_in_order() {
    let input = b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\n\
        POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc\
        POST /3 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n1\r\nf\r\n0\r\n\r\n\
        HEAD /4 HTTP/1.0\r\n\r\n\
        GET /5 HTTP/1.1\r\nHost: a\r\n\r\n";
    let evs = same_events(input);
    assert_eq!(
        statuses(&evs),
        [
            "head GET /1",
            "end",
            "head POST /2",
            "body abc",
            "end",
            "head POST /3",
            "body def",
            "end",
            "head HEAD /4",
            "end",
            "closed"
        ]
    );
}

#[test]
fn a_response_is_owed_before_the_next_request_is_decoded() {
    let mut conn = ServerConn::new(limits());
    conn.feed(b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
    assert!(matches!(conn.next_event(), Event::Head(h) if h.target() == "/1"));
    assert_eq!(conn.next_event(), Event::End);
    assert_eq!(conn.next_event(), Event::Paused);
    assert!(!conn.wants_read(), "pipelined input waits in the kernel");
    let mut out = Vec::new();
    assert!(conn.write_head(&mut out, 200, 0, b"", false));
    assert!(matches!(conn.next_event(), Event::Head(h) if h.target() == "/2"));
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("HTTP/1.1 200 OK\r\nServer: loadlab/"),
        "{text}"
    );
    assert!(text.contains("\r\nDate: ") && text.contains("\r\nContent-Length: 0\r\n"));
}

/// Regression: a chunk crossing the body limit was refused only when a
/// piece of it arrived that crossed the limit, so how much of it was
/// delivered before the 413 depended on how the bytes were split. Now the
/// chunk is refused when its size line is read.
#[test]
fn regression_oversized_chunk_was_partly_delivered_depending_on_reads() {
    let mut input = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    input.extend_from_slice(b"10\r\n0123456789abcdef\r\n");
    input.extend_from_slice(format!("{:x}\r\n", limits().max_body).as_bytes());
    input.resize(input.len() + 1000, b'x');
    let evs = same_events(&input);
    assert_eq!(
        statuses(&evs),
        [
            "head POST /",
            "body 0123456789abcdef",
            "error 413",
            "closed"
        ]
    );
}

/// Regression: a CR ending one read was skipped as an empty line before
/// the request, so "\rGET" was accepted in two reads and refused in one.
#[test]
fn regression_bare_cr_split_across_reads_was_accepted() {
    for input in [&b"\rGET / HTTP/1.1\r\nHost: a\r\n\r\n"[..], b"\r\n\rX"] {
        assert_eq!(statuses(&same_events(input)), ["error 400", "closed"]);
    }
    let evs = same_events(b"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(statuses(&evs), ["head GET /", "end", "closed"]);
}

/// Regression: a head trickling in byte by byte had its request line
/// searched for its end, its version checked and (for HTTP/1.2 and later)
/// all of it copied again at every byte, so the work grew with the square
/// of its size: a slow client sending a large head one byte at a time made
/// the server scan gigabytes. Now each is done once per head. Measured as
/// how the cost grows: an 8 times larger head must cost about 8 times,
/// not 64 times, as much (the smallest of a few runs, so a busy machine
/// does not decide it).
#[test]
fn regression_a_head_trickled_byte_by_byte_was_rescanned_at_every_byte() {
    let head = |scale: usize| {
        let mut v = b"GET /".to_vec();
        v.resize(1000 * scale - b" HTTP/1.9".len(), b'a');
        v.extend_from_slice(b" HTTP/1.9\r\nHost: a\r\n");
        for i in 0..7 * scale {
            v.extend_from_slice(format!("X-{i:04}: {}\r\n", "v".repeat(990)).as_bytes());
        }
        v.extend_from_slice(b"\r\n");
        v
    };
    let (small, large) = (head(1), head(8));
    let cost = |input: &[u8]| {
        let started = std::time::Instant::now();
        let evs = drive(input, Split::Feed(1));
        assert_eq!(statuses(&evs)[1..], ["end", "closed"], "{evs:?}");
        started.elapsed()
    };
    let (mut t_small, mut t_large) = (std::time::Duration::MAX, std::time::Duration::MAX);
    for _ in 0..5 {
        t_small = t_small.min(cost(&small));
        t_large = t_large.min(cost(&large));
    }
    let ratio = t_large.as_secs_f64() / t_small.as_secs_f64();
    assert!(
        ratio < 24.0,
        "8x the head cost {ratio:.1}x the time ({t_small:?} -> {t_large:?}): quadratic"
    );
}
