//! Well-formed requests and their answers: HEAD, Expect: 100-continue,
//! request bodies, absolute-form targets, later HTTP/1 minor versions, and
//! answers that must carry no content (errors to HEAD, 205).

use std::io::Write;

use crate::common::*;

use super::support::{expect_error, get, one, show, LONG};

pub fn head_requests(model: &str) {
    let server = TestServer::start(model, &[]);
    let mut s = server.connect();
    for (path, len) in [("/", "1652"), ("/bytes/10", "10"), ("/20KB.html", "20480")] {
        s.write_all(format!("HEAD {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
            .unwrap();
        let r = read_response(&mut s, true).unwrap();
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-length"), Some(len), "{path}");
    }
    // No body followed the HEAD responses: the next response parses.
    s.write_all(&get("/bytes/3")).unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"abc".to_vec()));
}

pub fn expect_100_continue(model: &str) {
    let server = TestServer::start(model, &["--max-body", "1K"]);

    // Interim 100 before the body is sent, then the final response.
    let mut s = server.connect();
    s.write_all(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
    )
    .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.status, 100);
    s.write_all(b"hello").unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"hello".to_vec()));
    // The connection stays usable.
    s.write_all(&get("/bytes/2")).unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().body, b"ab");

    // Chunked with Expect.
    let mut s = server.connect();
    s.write_all(b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().status, 100);
    s.write_all(b"2\r\nhi\r\n0\r\n\r\n").unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"hi".to_vec()));

    // Too large: the final 413 comes instead of 100, and the connection
    // closes because the body was never read.
    expect_error(
        &server,
        b"POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n",
        413,
    );

    // A route that answers without reading the body sends no 100 either.
    let mut s = server.connect();
    s.write_all(
        b"POST /bytes/3 HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
    )
    .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, &r.body[..]), (200, &b"abc"[..]));
    assert_eq!(r.header("connection"), Some("close"));
    assert!(is_closed(&mut s, LONG));

    // HTTP/1.0 clients do not know 100: the expectation is ignored.
    let mut s = server.connect();
    s.write_all(b"POST /echo HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok")
        .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"ok".to_vec()));
    assert_alive(&server);
}

pub fn request_bodies(model: &str) {
    let server = TestServer::start(model, &[]);
    let mut s = server.connect();
    let mut send = |raw: &[u8], want: &[u8]| {
        s.write_all(raw).unwrap();
        let r = read_response(&mut s, false).unwrap();
        assert_eq!(r.status, 200, "{:?}", show(raw));
        assert_eq!(r.body, want, "{:?}", show(raw));
    };
    // Content-Length, including a repeated identical value.
    send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello world",
        b"hello world",
    );
    send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3, 3\r\n\r\nabc",
        b"abc",
    );
    send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
        b"",
    );
    // Chunked with extensions, upper- and lower-case hex, and trailers.
    send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
          5;name=value\r\nhello\r\n1 ; quoted=\"a;b\"\r\n \r\nA\r\n0123456789\r\na\r\nabcdefghij\r\n\
          0;last\r\nX-Trailer: 1\r\nX-Other: two\r\n\r\n",
        b"hello 0123456789abcdefghij",
    );
    send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n",
        b"",
    );
    // A body larger than one read buffer, in many chunks.
    let mut raw = b"PUT /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    let mut want = Vec::new();
    for i in 0..200u32 {
        let piece = vec![b'a' + (i % 26) as u8; 1000 + i as usize];
        raw.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        raw.extend_from_slice(&piece);
        raw.extend_from_slice(b"\r\n");
        want.extend_from_slice(&piece);
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    send(&raw, &want);
    // A GET with a body: the body is read and discarded, the connection
    // stays in sync.
    send(
        b"GET /bytes/4 HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nxxxx",
        b"abcd",
    );
    send(
        b"GET /bytes/4 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxx\r\n0\r\n\r\n",
        b"abcd",
    );
    send(&get("/bytes/1"), b"a");
}

pub fn absolute_form_targets(model: &str) {
    let server = TestServer::start(model, &[]);
    for (raw, len) in [
        (
            &b"GET http://example.com/500B.html HTTP/1.1\r\nHost: example.com\r\n\r\n"[..],
            500,
        ),
        (
            b"GET http://example.com:8080/bytes/9?x=1 HTTP/1.1\r\nHost: example.com\r\n\r\n",
            9,
        ),
        (
            b"GET HTTP://EXAMPLE.COM HTTP/1.1\r\nHost: example.com\r\n\r\n",
            1652,
        ),
        (b"GET http://example.com?q HTTP/1.0\r\n\r\n", 1652),
    ] {
        let r = one(&server, raw);
        assert_eq!((r.status, r.body.len()), (200, len), "{:?}", show(raw));
    }
    // Origin-form with a query string.
    let r = one(&server, &get("/500B.html?a=b&c"));
    assert_eq!((r.status, r.body.len()), (200, 500));
    // A target that is none of the forms.
    expect_error(&server, b"GET 500B.html HTTP/1.1\r\nHost: t\r\n\r\n", 400);
}

/// RFC 9110 9.3.2: no content in any answer to HEAD, errors included.
pub fn regression_error_answers_to_head_carried_a_body(model: &str) {
    let server = TestServer::start(model, &["--max-body", "1K"]);
    for (raw, status) in [
        (
            "HEAD /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999\r\n\r\n",
            "413",
        ),
        (
            "HEAD /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
            "400",
        ),
    ] {
        let mut s = std::net::TcpStream::connect(server.addr).unwrap();
        s.write_all(raw.as_bytes()).unwrap();
        let bytes = read_rest(&mut s, LONG);
        let text = String::from_utf8_lossy(&bytes);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no head in {text:?}"));
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{head}");
        assert!(head.contains("Connection: close"), "{head}");
        assert!(body.is_empty(), "{raw:?}: body {body:?}");
    }
}

/// RFC 9110 15.3.6: no content in a 205; and every status it defines has
/// its reason phrase, not "Unknown".
pub fn regression_205_carried_content_and_an_unknown_reason(model: &str) {
    let server = TestServer::start(model, &[]);
    let answer = |code: u16| {
        let raw = format!("GET /status/{code} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        let mut s = std::net::TcpStream::connect(server.addr).unwrap();
        s.write_all(raw.as_bytes()).unwrap();
        String::from_utf8(read_rest(&mut s, LONG)).unwrap()
    };
    let text = answer(205);
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 205 Reset Content\r\n"), "{head}");
    assert!(head.contains("\r\nContent-Length: 0\r\n"), "{head}");
    assert!(body.is_empty(), "{body:?}");
    for (code, reason) in [
        (429, "Too Many Requests"),
        (502, "Bad Gateway"),
        (410, "Gone"),
    ] {
        let text = answer(code);
        assert!(
            text.starts_with(&format!("HTTP/1.1 {code} {reason}\r\n")),
            "{text}"
        );
    }
}

/// Regression: HTTP/1.2 was answered 505. A later minor version of HTTP/1
/// is served as HTTP/1.1 (RFC 9110 section 2.5); another major is still
/// 505.
pub fn regression_http_1_2_was_505(model: &str) {
    let server = TestServer::start(model, &[]);
    let mut s = server.connect();
    s.write_all(
        b"GET /bytes/2 HTTP/1.2\r\nHost: t\r\n\r\nGET /bytes/3 HTTP/1.9\r\nHost: t\r\n\r\n",
    )
    .unwrap();
    for body in [&b"ab"[..], b"abc"] {
        let r = read_response(&mut s, false).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, body));
    }
    expect_error(&server, b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505);
}
