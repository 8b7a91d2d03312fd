//! Handler semantics of issue 19 item 6: static files honour single byte
//! ranges as the file service does, a file's path with a trailing slash is
//! 404 and a directory's without one is 301, the file service's answers
//! carry `Cache-Control: no-cache`, and a discarded request body has one
//! bound whether or not the client sent `Expect: 100-continue`.
//!
//! The handlers are the same code under every model, so those run on one;
//! the discarded-body bound involves how each model reads and closes, so
//! it runs on every model.

use crate::common;

use std::io::Write;
use std::time::Duration;

use common::*;

per_model!(regression_discarded_body_bound_depended_on_expect);

const MODEL: &str = "event-loop";
const LONG: Duration = Duration::from_secs(5);

fn get(path: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n{extra}\r\n").into_bytes()
}

/// A root with a small file (served from memory), a large one (sendfile)
/// and a directory with an index.
fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), b"0123456789abcdef").unwrap();
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.path().join("big.bin"), &big).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/index.html"), b"sub index\n").unwrap();
    dir
}

#[test]
fn regression_static_files_ignored_ranges() {
    let dir = root();
    let server = TestServer::start(MODEL, &["--root", dir.path().to_str().unwrap()]);

    let r = exchange(&server, &get("/a.txt", "Range: bytes=2-5\r\n"));
    assert_eq!((r.status, &r.body[..]), (206, &b"2345"[..]));
    assert_eq!(r.header("content-range"), Some("bytes 2-5/16"));
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
    let etag = r.header("etag").expect("ETag").to_string();

    // A large file goes out with sendfile from the range's offset.
    let r = exchange(&server, &get("/big.bin", "Range: bytes=1000-1999\r\n"));
    assert_eq!(r.status, 206);
    let want: Vec<u8> = (1000..2000u32).map(|i| (i % 251) as u8).collect();
    assert!(r.body == want, "wrong bytes for 1000-1999");
    assert_eq!(r.header("content-range"), Some("bytes 1000-1999/200000"));
    let r = exchange(&server, &get("/big.bin", "Range: bytes=-10\r\n"));
    assert_eq!((r.status, r.body.len()), (206, 10));

    // Past the end: 416 with the length; several ranges: the whole file.
    let r = exchange(&server, &get("/a.txt", "Range: bytes=16-\r\n"));
    assert_eq!(r.status, 416);
    assert_eq!(r.header("content-range"), Some("bytes */16"));
    let r = exchange(&server, &get("/a.txt", "Range: bytes=0-1,4-5\r\n"));
    assert_eq!((r.status, r.body.len()), (200, 16));

    // If-Range: the range holds for this version only.
    let r = exchange(
        &server,
        &get(
            "/a.txt",
            &format!("Range: bytes=0-0\r\nIf-Range: {etag}\r\n"),
        ),
    );
    assert_eq!((r.status, &r.body[..]), (206, &b"0"[..]));
    let r = exchange(
        &server,
        &get("/a.txt", "Range: bytes=0-0\r\nIf-Range: \"other\"\r\n"),
    );
    assert_eq!((r.status, r.body.len()), (200, 16));

    // HEAD describes the whole file.
    let r = exchange(
        &server,
        b"HEAD /a.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=2-5\r\n\r\n",
    );
    assert_eq!((r.status, r.header("content-length")), (200, Some("16")));

    // The embedded docroot too.
    let server = TestServer::start(MODEL, &[]);
    let r = exchange(&server, &get("/500B.html", "Range: bytes=0-9\r\n"));
    assert_eq!((r.status, r.body.len()), (206, 10));
    assert_eq!(r.header("content-range"), Some("bytes 0-9/500"));
}

#[test]
fn regression_file_path_with_trailing_slash_was_served() {
    let dir = root();
    let server = TestServer::start(MODEL, &["--root", dir.path().to_str().unwrap()]);
    for path in ["/a.txt/", "/big.bin/", "/sub/index.html/"] {
        assert_eq!(exchange(&server, &get(path, "")).status, 404, "{path}");
    }
    // A directory without its slash: 301 to it, the query kept.
    for (path, to) in [
        ("/sub", "/sub/"),
        ("/sub?x=1&y", "/sub/?x=1&y"),
        // Never `//sub/`, which a client would read as another host.
        ("//sub", "/sub/"),
    ] {
        let r = exchange(&server, &get(path, ""));
        assert_eq!((r.status, r.header("location")), (301, Some(to)), "{path}");
    }
    let r = exchange(&server, &get("/sub/", ""));
    assert_eq!((r.status, &r.body[..]), (200, &b"sub index\n"[..]));
    assert_eq!(exchange(&server, &get("/a.txt", "")).status, 200);

    // The embedded docroot: `/` is its directory, its files take no slash.
    let server = TestServer::start(MODEL, &[]);
    assert_eq!(exchange(&server, &get("/", "")).status, 200);
    assert_eq!(exchange(&server, &get("/index.html", "")).status, 200);
    for path in ["/index.html/", "/500B.html/"] {
        assert_eq!(exchange(&server, &get(path, "")).status, 404, "{path}");
    }
}

#[test]
fn regression_file_service_answers_lacked_cache_control() {
    let server = TestServer::start(MODEL, &[]);
    let r = exchange(
        &server,
        b"PUT /files/f.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
    );
    assert_eq!(r.status, 201);
    let no_cache = |what: &str, r: &RawResponse| {
        assert_eq!(r.header("cache-control"), Some("no-cache"), "{what}: {r:?}");
    };
    let r = exchange(&server, &get("/files/f.txt", ""));
    no_cache("download", &r);
    let etag = r.header("etag").expect("ETag").to_string();
    no_cache(
        "revalidation",
        &exchange(
            &server,
            &get("/files/f.txt", &format!("If-None-Match: {etag}\r\n")),
        ),
    );
    no_cache(
        "range",
        &exchange(&server, &get("/files/f.txt", "Range: bytes=0-1\r\n")),
    );
    no_cache(
        "?sha256",
        &exchange(&server, &get("/files/f.txt?sha256", "")),
    );
    no_cache("listing", &exchange(&server, &get("/files/", "")));
}

/// `--max-body 1K` bounds a body the route throws away. Past it: 413 at
/// once, whether or not the client waits for 100 (before, a waiting client
/// got the route's answer whatever it declared). Within it: the route's
/// answer; the body is read and the connection kept, or, for a client that
/// waits, the answer comes at once without a 100 and the connection closes.
fn regression_discarded_body_bound_depended_on_expect(model: &str) {
    let server = TestServer::start(model, &["--max-body", "1K"]);
    let post = |len: usize, expect: bool| {
        let e = if expect {
            "Expect: 100-continue\r\n"
        } else {
            ""
        };
        format!("POST /bytes/3 HTTP/1.1\r\nHost: t\r\n{e}Content-Length: {len}\r\n\r\n")
            .into_bytes()
    };
    for expect in [false, true] {
        // Past the bound.
        let mut s = server.connect();
        write_ignoring_errors(&mut s, &post(2000, expect));
        if !expect {
            write_ignoring_errors(&mut s, &[b'x'; 2000]);
        }
        let r = read_response(&mut s, false).unwrap();
        assert_eq!(r.status, 413, "expect={expect}");
        assert_eq!(r.header("connection"), Some("close"));
        assert!(is_closed(&mut s, LONG), "expect={expect}");

        // Within it.
        let mut s = server.connect();
        s.write_all(&post(1024, expect)).unwrap();
        if !expect {
            s.write_all(&[b'x'; 1024]).unwrap();
        }
        let r = read_response(&mut s, false).unwrap();
        assert_eq!(
            (r.status, &r.body[..]),
            (200, &b"abc"[..]),
            "expect={expect}"
        );
        if expect {
            assert_eq!(r.header("connection"), Some("close"));
            assert!(is_closed(&mut s, LONG));
        } else {
            s.write_all(&get("/bytes/2", "")).unwrap();
            assert_eq!(read_response(&mut s, false).unwrap().body, b"ab");
        }
    }
    // A chunked body is held to the same bound as it arrives.
    let mut raw =
        b"POST /bytes/3 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..3 {
        raw.extend_from_slice(b"200\r\n");
        raw.extend_from_slice(&[b'y'; 512]);
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    let mut s = server.connect();
    write_ignoring_errors(&mut s, &raw);
    assert_eq!(read_response(&mut s, false).unwrap().status, 413);
    assert_alive(&server);
}
