//! Requests refused for their form: malformed ones get 400 (at once, even
//! split across reads), unsupported codings, methods and versions 501 or
//! 505, and known methods no route takes 405 or 501 on a kept connection.

use std::io::Write;
use std::time::Duration;

use crate::common::*;

use super::support::{expect_error, get, show, LONG};

pub fn malformed_requests_get_400(model: &str) {
    let server = TestServer::start(model, &[]);
    let cases: &[(&str, &[u8])] = &[
        ("missing Host on 1.1", b"GET / HTTP/1.1\r\n\r\n"),
        (
            "duplicate Host",
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        ),
        (
            "duplicate Host, same value",
            b"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n",
        ),
        (
            "whitespace before colon",
            b"GET / HTTP/1.1\r\nHost: t\r\nX-A : b\r\n\r\n",
        ),
        ("whitespace before colon in Host", b"GET / HTTP/1.1\r\nHost : t\r\n\r\n"),
        (
            "obs-fold",
            b"GET / HTTP/1.1\r\nHost: t\r\nX-A: b\r\n  c\r\n\r\n",
        ),
        (
            "obs-fold with tab",
            b"GET / HTTP/1.1\r\nHost: t\r\nX-A: b\r\n\tc\r\n\r\n",
        ),
        (
            "bad field name (paren)",
            b"GET / HTTP/1.1\r\nHost: t\r\nX(A): b\r\n\r\n",
        ),
        (
            "bad field name (space)",
            b"GET / HTTP/1.1\r\nHost: t\r\nX A: b\r\n\r\n",
        ),
        ("empty field name", b"GET / HTTP/1.1\r\nHost: t\r\n: b\r\n\r\n"),
        ("field without colon", b"GET / HTTP/1.1\r\nHost: t\r\nXA\r\n\r\n"),
        (
            "NUL in field value",
            b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\0b\r\n\r\n",
        ),
        ("NUL in target", b"GET /a\0b HTTP/1.1\r\nHost: t\r\n\r\n"),
        (
            "bare CR in field value",
            b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\rb\r\n\r\n",
        ),
        (
            "bare CR ending a field",
            b"GET / HTTP/1.1\r\nHost: t\rX-A: b\r\n\r\n",
        ),
        ("bare CR in request line", b"GET /\r HTTP/1.1\r\nHost: t\r\n\r\n"),
        ("bare CR before request line", b"\rGET / HTTP/1.1\r\nHost: t\r\n\r\n"),
        (
            "Content-Length not a number",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n",
        ),
        (
            "Content-Length negative",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n",
        ),
        (
            "Content-Length with plus",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: +5\r\n\r\nhello",
        ),
        (
            "Content-Length empty",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \r\n\r\n",
        ),
        (
            "Content-Length overflow",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        ),
        (
            "Content-Length hex",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0x5\r\n\r\nhello",
        ),
        (
            "conflicting Content-Length fields",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        ),
        (
            "conflicting Content-Length list",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5, 6\r\n\r\nhello!",
        ),
        (
            "Content-Length with Transfer-Encoding",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ),
        (
            "chunked not last",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
        ),
        (
            "chunked twice",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ),
        (
            "empty Transfer-Encoding",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: \r\n\r\n",
        ),
        (
            "Transfer-Encoding in HTTP/1.0",
            b"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ),
        (
            "chunk size not hex",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk size with 0x",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk size negative",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk size empty",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk size overflow",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000005\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk size with space inside",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1 0\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk data without CRLF",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
        ),
        (
            "chunk size line with bare LF",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk size line too long",
            &[
                &b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;"[..],
                &[b'x'; 10_000][..],
                b"\r\nhello\r\n0\r\n\r\n",
            ]
            .concat(),
        ),
        (
            "bad trailer field",
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nno colon\r\n\r\n",
        ),
        ("malformed version", b"GET / HTTP/1.1x\r\nHost: t\r\n\r\n"),
        ("lowercase version", b"GET / http/1.1\r\nHost: t\r\n\r\n"),
        ("no version", b"GET /\r\n\r\n"),
        ("two spaces", b"GET  / HTTP/1.1\r\nHost: t\r\n\r\n"),
        ("empty method", b" / HTTP/1.1\r\nHost: t\r\n\r\n"),
        ("control byte in target", b"GET /a\x01 HTTP/1.1\r\nHost: t\r\n\r\n"),
    ];
    for (what, raw) in cases {
        eprintln!("{what}");
        expect_error(&server, raw, 400);
    }
}

pub fn incomplete_body_at_eof_gets_400(model: &str) {
    let server = TestServer::start(model, &[]);
    for raw in [
        &b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello"[..],
        b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
    ] {
        let mut s = server.connect();
        s.write_all(raw).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let r = read_response(&mut s, false).unwrap();
        assert_eq!(r.status, 400, "{:?}", show(raw));
        assert!(is_closed(&mut s, LONG));
        assert_alive(&server);
    }
    // A head cut short by EOF just ends the connection.
    let mut s = server.connect();
    s.write_all(b"GET / HTTP/1.1\r\nHost").unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(read_rest(&mut s, LONG), b"");
    assert_alive(&server);
}

pub fn unsupported_codings_methods_versions(model: &str) {
    let server = TestServer::start(model, &[]);
    let cases: &[(&[u8], u16)] = &[
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: foo\r\n\r\n",
            501,
        ),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: identity\r\n\r\n",
            501,
        ),
        (
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            501,
        ),
        (b"FOO / HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        // Not a proxy: CONNECT is not implemented, whatever its target.
        (
            b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
            501,
        ),
        (b"BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"get / HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"Get / HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
        // A malformed line is refused when it is complete, not after the
        // header timeout (the regression: 408 ten seconds later).
        (b"GET / HTTP/1.1\r\nHost: t\rX-A: b\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nno colon here\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: u@host\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: h:8x\r\n\r\n", 400),
        (b"GET * HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"GET /500B.html#top HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"GET / HTTP/3.0\r\nHost: t\r\n\r\n", 505),
        (b"GET / HTTP/0.9\r\n\r\n", 505),
    ];
    for (raw, status) in cases {
        expect_error(&server, raw, *status);
    }
}

/// Known methods that no route takes are answered (405 or 501) without
/// ending the connection: they are well-formed requests.
pub fn unknown_known_methods_keep_the_connection(model: &str) {
    let server = TestServer::start(model, &[]);
    let mut s = server.connect();
    for (raw, status) in [
        (
            &b"PUT / HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi"[..],
            405,
        ),
        (b"DELETE /500B.html HTTP/1.1\r\nHost: t\r\n\r\n", 405),
        (b"GET /echo HTTP/1.1\r\nHost: t\r\n\r\n", 405),
        (b"OPTIONS / HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        // The same method gets the same answer on every route: 405 for one
        // the server implements elsewhere, 501 for one it implements nowhere.
        (b"PATCH / HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"PATCH /bytes/1 HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"PATCH /echo HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"PATCH /files/x HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"OPTIONS /echo HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"TRACE /status/200 HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"DELETE /bytes/1 HTTP/1.1\r\nHost: t\r\n\r\n", 405),
        (
            b"PUT /files/ HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
            405,
        ),
        (
            b"POST /500B.html HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi",
            200,
        ),
    ] {
        s.write_all(raw).unwrap();
        let r = read_response(&mut s, false).unwrap();
        assert_eq!(r.status, status, "{:?}", show(raw));
        assert_eq!(r.header("connection"), None, "{:?}", show(raw));
        if status == 405 {
            assert!(
                r.header("allow").is_some(),
                "405 names Allow: {:?}",
                show(raw)
            );
        }
    }
    s.write_all(&get("/bytes/2")).unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().body, b"ab");
}

/// Regression: a CR that ended one read was skipped as part of an empty
/// line before the request, so "\rGET / ..." was refused when it arrived in
/// one read and accepted when it arrived in two.
pub fn regression_bare_cr_split_across_reads_was_accepted(model: &str) {
    let server = TestServer::start(model, &[]);
    let mut s = server.connect();
    s.write_all(b"\r").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    write_ignoring_errors(&mut s, b"GET /500B.html HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.status, 400);
    assert!(is_closed(&mut s, LONG));
    // CR LF split the same way is an empty line and is skipped.
    let mut s = server.connect();
    s.write_all(b"\r").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    s.write_all(b"\nGET /bytes/2 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"ab".to_vec()));
    assert_alive(&server);
}

/// Regression: a bare CR or a field line without a colon, with no blank
/// line after it, was answered 408 when the header timeout ran out (10 s),
/// so a client that would never send a valid head held the connection that
/// long. It is 400 as soon as the line is complete.
pub fn regression_malformed_line_waited_for_the_header_timeout(model: &str) {
    let server = TestServer::start(model, &[]);
    for raw in [
        &b"GET / HTTP/1.1\r\nHost: t\rX-A: b\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: t\r\nno colon\r\n",
        b"GET /\r HTTP/1.1\r\n",
    ] {
        let mut s = server.connect();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        write_ignoring_errors(&mut s, raw);
        let r = read_response(&mut s, false)
            .unwrap_or_else(|e| panic!("no answer within 2 s to {:?}: {e}", show(raw)));
        assert_eq!(r.status, 400, "{:?}", show(raw));
    }
    assert_alive(&server);
}
