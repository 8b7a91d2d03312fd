//! Size limits and their answers: the request line (414), the header
//! section (431) and the body (413).

use crate::common::*;

use std::io::Write;
use std::time::Duration;

use super::support::{expect_error, one, LONG};

/// A request line of exactly `len` octets (CRLF not counted).
fn line_of(len: usize) -> Vec<u8> {
    let fixed = "GET /500B.html?".len() + " HTTP/1.1".len();
    let mut line = b"GET /500B.html?".to_vec();
    line.resize(len - " HTTP/1.1".len(), b'a');
    assert!(len > fixed);
    line.extend_from_slice(b" HTTP/1.1\r\nHost: t\r\n\r\n");
    line
}

pub fn request_line_limits(model: &str) {
    let server = TestServer::start(model, &[]);
    for len in [8000, 8192] {
        let r = one(&server, &line_of(len));
        assert_eq!((r.status, r.body.len()), (200, 500), "line of {len}");
    }
    expect_error(&server, &line_of(8193), 414);
    expect_error(&server, &line_of(20_000), 414);
    // A long line with no end at all.
    expect_error(&server, &vec![b'G'; 100_000], 414);
}

pub fn header_section_limits(model: &str) {
    let server = TestServer::start(model, &[]);
    let with_fields = |n: usize, size: usize| {
        let mut raw = b"GET /bytes/1 HTTP/1.1\r\nHost: t\r\n".to_vec();
        for i in 1..n {
            let mut line = format!("X-F{i}: ").into_bytes();
            line.resize(size.max(line.len() + 1), b'v');
            raw.extend_from_slice(&line);
            raw.extend_from_slice(b"\r\n");
        }
        raw.extend_from_slice(b"\r\n");
        raw
    };
    // 100 fields (Host included) are fine, 101 are not.
    assert_eq!(one(&server, &with_fields(100, 10)).status, 200);
    expect_error(&server, &with_fields(101, 10), 431);
    expect_error(&server, &with_fields(1000, 10), 431);
    // A section just under 64 KiB is fine, one over it is not.
    assert_eq!(one(&server, &with_fields(10, 6000)).status, 200);
    expect_error(&server, &with_fields(3, 33_000), 431);
    expect_error(&server, &with_fields(2, 70_000), 431);
    // The longest line and a header section near its limit together fill
    // the largest head buffer; they must still fit.
    let mut raw = line_of(8192);
    raw.truncate(raw.len() - 2);
    let mut field = b"X-Big: ".to_vec();
    field.resize(65_000, b'b');
    raw.extend_from_slice(&field);
    raw.extend_from_slice(b"\r\n\r\n");
    let r = one(&server, &raw);
    assert_eq!((r.status, r.body.len()), (200, 500));
    // Endless header bytes without an end of the section.
    let mut raw = b"GET / HTTP/1.1\r\nHost: t\r\nX-Long: ".to_vec();
    raw.resize(200_000, b'x');
    expect_error(&server, &raw, 431);
}

pub fn body_limit_413(model: &str) {
    let server = TestServer::start(model, &["--max-body", "1K"]);
    let body = vec![b'x'; 1024];
    let mut raw = b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1024\r\n\r\n".to_vec();
    raw.extend_from_slice(&body);
    let r = one(&server, &raw);
    assert_eq!((r.status, r.body.len()), (200, 1024));

    let mut raw = b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1025\r\n\r\n".to_vec();
    raw.extend_from_slice(&[b'x'; 1025]);
    expect_error(&server, &raw, 413);
    // Declared far too large, body never sent.
    expect_error(
        &server,
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000000000\r\n\r\n",
        413,
    );
    // Chunked bodies are counted as they arrive.
    let mut raw = b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..3 {
        raw.extend_from_slice(b"200\r\n");
        raw.extend_from_slice(&[b'y'; 512]);
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    expect_error(&server, &raw, 413);
}

/// A body still coming after its 413 went out is read and dropped while
/// the close lingers, not answered with RST: every piece the client sends
/// within the linger is taken, and it reads the whole answer, then EOF.
pub fn a_late_body_is_taken_while_the_close_lingers(model: &str) {
    let server = TestServer::start(model, &["--max-body", "1K"]);
    let mut s = server.connect();
    s.write_all(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
        .unwrap();
    s.write_all(&[b'x'; 2048]).unwrap();
    // The 413 is out and the server's side is shut by now; what follows
    // reaches a closing connection, 10 ms apart (well within the 100 ms
    // without data that ends a linger).
    std::thread::sleep(Duration::from_millis(50));
    for i in 0..5 {
        let sent = s.write_all(&[b'y'; 8192]);
        assert!(sent.is_ok(), "late piece {i} refused: {sent:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let r = read_response(&mut s, false).expect("the 413, whole");
    assert_eq!(r.status, 413);
    assert!(is_closed(&mut s, LONG), "closed after the answer");
}
