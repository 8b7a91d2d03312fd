//! What reaches the server, seen by a capturing fake server: request flags
//! as given, the body bytes counted as ab counts them, and flags that do not
//! mix or are bad.

use crate::common::bench::{bench_json, bench_text, u};
use crate::common::fake::{Behaviour, FakeServer};
use crate::common::*;
use serde_json::Value;

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let cases: [&[&str]; 15] = [
        &["-n", "10", "not-a-url"],
        &["-n", "10", "-H", "Content-Length: 5", "http://127.0.0.1:9/"],
        // https works; a protocol rustls lacks is refused by name.
        &["-n", "10", "-f", "SSL3", "https://127.0.0.1:9/"],
        &["-n", "10", "-p", "/nonexistent/body", "http://127.0.0.1:9/"],
        &["-n", "5", "-c", "10", "http://127.0.0.1:9/"],
        &["-n", "0", "http://127.0.0.1:9/"],
        &["-n", "10", "-c", "0", "http://127.0.0.1:9/"],
        &["-n", "10", "-s", "0", "http://127.0.0.1:9/"],
        &["-n", "10", "--rate=-5", "http://127.0.0.1:9/"],
        // Finer than the nanosecond schedule: refused, not an overflow.
        &["-t", "1", "--rate", "1e300", "http://127.0.0.1:9/"],
        &["-t", "0", "http://127.0.0.1:9/"],
        &["-n", "10", "--threads", "0", "http://127.0.0.1:9/"],
        // Negative values are refused as values, not as unknown flags.
        &["-n", "-5", "http://127.0.0.1:9/"],
        &["-t", "-1", "http://127.0.0.1:9/"],
        &["-n", "10", "--warmup", "-1s", "http://127.0.0.1:9/"],
    ];
    for args in cases {
        let (stdout, stderr, code) = bench_text(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        if args
            .iter()
            .any(|a| a.starts_with('-') && a.as_bytes().get(1).is_some_and(u8::is_ascii_digit))
        {
            assert!(stderr.contains("invalid value '-"), "{args:?}: {stderr}");
        }
        if args[2] == "-f" {
            assert!(stderr.contains("SSL3 is obsolete"), "{stderr}");
        }
        assert!(stdout.is_empty(), "{args:?}");
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "{args:?}: one line, got {stderr}"
        );
    }
    for args in [
        &["-n", "10", "-c", "-3", "http://127.0.0.1:9/"][..],
        &["--no-such-flag", "http://x/"][..],
    ] {
        let (_, stderr, code) = bench_text(args);
        assert_eq!(code, 2, "{stderr}");
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "clap errors are one line too: {stderr}"
        );
    }
}

/// A captured request: request line, headers (names lower-cased, in
/// order), body, and its size on the wire.
struct Seen {
    len: u64,
    line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn parse(raw: &[u8]) -> Seen {
        let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let head = std::str::from_utf8(&raw[..end]).unwrap();
        let mut lines = head.split("\r\n");
        let line = lines.next().unwrap().to_string();
        let headers = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (n, v) = l.split_once(':').unwrap();
                (n.to_ascii_lowercase(), v.trim().to_string())
            })
            .collect();
        Seen {
            len: raw.len() as u64,
            line,
            headers,
            body: raw[end..].to_vec(),
        }
    }

    fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// Runs bench against the capture server and returns what it received.
fn capture(fake: &FakeServer, args: &[&str]) -> (Value, Vec<Seen>) {
    let r = bench_json(args);
    assert_eq!(u(&r, "/failed"), 0, "{args:?}: {}", r["errors"]);
    let seen = fake.take_captured();
    assert_eq!(seen.len() as u64, u(&r, "/complete"), "{args:?}");
    (r, seen.iter().map(|raw| Seen::parse(raw)).collect())
}

#[test]
fn request_flags_reach_the_server_as_given() {
    let fake = FakeServer::start(Behaviour::Capture);
    let url = fake.url("/path?x=1");

    let (_, seen) = capture(
        &fake,
        &[
            "-n",
            "3",
            "-H",
            "Host: example.test",
            "-H",
            "X-Trace: abc",
            "-C",
            "a=1",
            "-C",
            "b=2",
            "-A",
            "user:pa:ss",
            &url,
        ],
    );
    assert_eq!(seen.len(), 3);
    let (help, _, _) = bench_text(&["--help"]);
    assert!(
        help.contains(
            "all go in one Cookie header, as RFC 6265 asks, where ab 2.3 sends only the last -C"
        ),
        "{help}"
    );
    for s in &seen {
        assert_eq!(s.line, "GET /path?x=1 HTTP/1.0");
        assert_eq!(s.all("host"), ["example.test"], "-H Host replaces ours");
        assert_eq!(s.all("x-trace"), ["abc"]);
        // Unlike ab 2.3 (the last -C only), and the help says so.
        assert_eq!(s.all("cookie"), ["a=1; b=2"]);
        assert_eq!(s.all("authorization"), ["Basic dXNlcjpwYTpzcw=="]);
        assert!(s.all("connection").is_empty(), "no keep-alive without -k");
        assert!(s.all("content-length").is_empty() && s.body.is_empty());
    }

    let (r, seen) = capture(&fake, &["-n", "2", "-i", "-k", &url]);
    assert_eq!(r["run"]["method"], "HEAD");
    for s in &seen {
        assert_eq!(s.line, "HEAD /path?x=1 HTTP/1.0");
        assert_eq!(s.all("connection"), ["Keep-Alive"]);
        assert_eq!(s.all("host"), [format!("{}", fake.addr)]);
    }
    assert_eq!(
        u(&r, "/bytes/html_received"),
        0,
        "HEAD answers have no body"
    );

    let (_, seen) = capture(&fake, &["-n", "2", "-m", "PATCH", &url]);
    assert!(seen.iter().all(|s| s.line == "PATCH /path?x=1 HTTP/1.0"));

    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.json");
    std::fs::write(&body, br#"{"k": [1, 2, 3]}"#).unwrap();
    let body = body.to_str().unwrap();
    for (flag, method, ct) in [
        ("-p", "POST", "application/json"),
        ("-u", "PUT", "text/plain"),
    ] {
        let mut args = vec!["-n", "2", flag, body];
        if flag == "-p" {
            args.extend(["-T", ct]);
        }
        args.push(&url);
        let (r, seen) = capture(&fake, &args);
        for s in &seen {
            assert_eq!(s.line, format!("{method} /path?x=1 HTTP/1.0"));
            assert_eq!(s.all("content-type"), [ct], "{flag}: -T, or ab's default");
            assert_eq!(s.all("content-length"), ["16"]);
            assert_eq!(s.body, br#"{"k": [1, 2, 3]}"#);
        }
        let raw: u64 = fake_request_bytes(&seen);
        assert_eq!(u(&r, "/bytes/body_sent"), raw, "{flag}: whole requests");
    }
}

/// Bytes of the captured requests, heads and bodies, as on the wire.
fn fake_request_bytes(seen: &[Seen]) -> u64 {
    seen.iter().map(|s| s.len).sum()
}

/// The number after `label` in a text report.
fn report_value(text: &str, label: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(label))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {label} in\n{text}"))
}

#[test]
fn total_body_sent_counts_whole_requests_as_ab_does() {
    // ab adds up every byte it writes for a request with a body: head and
    // body. Each tool is checked against what its own server received.
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("five");
    std::fs::write(&body, b"hello").unwrap();
    let body = body.to_str().unwrap();
    let theirs = FakeServer::start(Behaviour::Capture);
    let ab = tool("ab")
        .args(["-q", "-n", "3", "-p", body, &theirs.url("/")])
        .output()
        .unwrap();
    assert!(ab.status.success());
    let ab = String::from_utf8_lossy(&ab.stdout).into_owned();
    let ab_seen: Vec<Seen> = theirs
        .take_captured()
        .iter()
        .map(|r| Seen::parse(r))
        .collect();
    assert_eq!(ab_seen.len(), 3);
    let ab_sent = report_value(&ab, "Total body sent:");
    assert_eq!(
        ab_sent,
        fake_request_bytes(&ab_seen),
        "ab counts whole requests"
    );
    assert!(ab_sent > 3 * 5);

    let ours = FakeServer::start(Behaviour::Capture);
    let (text, err, code) = bench_text(&["-q", "-n", "3", "-p", body, &ours.url("/")]);
    assert_eq!(code, 0, "{err}");
    let seen: Vec<Seen> = ours
        .take_captured()
        .iter()
        .map(|r| Seen::parse(r))
        .collect();
    assert_eq!(
        report_value(&text, "Total body sent:"),
        fake_request_bytes(&seen)
    );
}

#[test]
fn head_post_and_put_do_not_mix() {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("b");
    std::fs::write(&body, b"x").unwrap();
    let body = body.to_str().unwrap();
    let url = "http://127.0.0.1:9/";
    for args in [
        &["-i", "-p", body, url][..],
        &["-p", body, "-i", url][..],
        &["-i", "-u", body, url][..],
        &["-p", body, "-u", body, url][..],
        &["-i", "-m", "GET", url][..],
    ] {
        let (stdout, stderr, code) = bench_text(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty());
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains("cannot mix"), "{args:?}: {stderr}");
    }
}

#[test]
fn inline_body_is_sent_as_a_post_and_does_not_mix_with_files() {
    let fake = FakeServer::start(Behaviour::Capture);
    let url = fake.url("/in");
    let (r, seen) = capture(&fake, &["-n", "2", "--body", "a=1&b=two", &url]);
    assert_eq!(r["run"]["method"], "POST");
    for s in &seen {
        assert_eq!(s.line, "POST /in HTTP/1.0");
        assert_eq!(s.all("content-length"), ["9"]);
        assert_eq!(s.all("content-type"), ["text/plain"], "ab's default");
        assert_eq!(s.body, b"a=1&b=two");
    }
    assert_eq!(u(&r, "/bytes/body_sent"), fake_request_bytes(&seen));
    // -m and -T apply to it as to -p.
    let args = [
        "-n",
        "1",
        "--body",
        "{}",
        "-m",
        "PUT",
        "-T",
        "application/json",
        &url,
    ];
    let (_, seen) = capture(&fake, &args);
    assert_eq!(seen[0].line, "PUT /in HTTP/1.0");
    assert_eq!(seen[0].all("content-type"), ["application/json"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("b");
    std::fs::write(&file, b"x").unwrap();
    let file = file.to_str().unwrap();
    for (args, says) in [
        (
            &["--body", "x", "-p", file, &url][..],
            "cannot mix --body with POST (-p)",
        ),
        (
            &["-u", file, "--body", "x", &url][..],
            "cannot mix --body with PUT (-u)",
        ),
        (
            &["--body", "x", "-i", &url][..],
            "cannot mix --body with HEAD (-i)",
        ),
    ] {
        let (stdout, stderr, code) = bench_text(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty());
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
