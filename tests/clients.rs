//! Real clients against every model: curl over HTTP/1.1 and HTTP/1.0, and
//! ab with experiment E1's rows (`ab -n 1000 -c C`, C in 1, 50, 100, 500,
//! 1000): every request completes, none fails, none is non-2xx.

use crate::common;

use std::process::Output;

use common::*;

per_model!(curl_http11_and_http10, ab_e1_rows_have_no_failures);

/// E1's concurrency levels.
const E1_CONCURRENCY: [u32; 5] = [1, 50, 100, 500, 1000];

fn run(out: Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn curl(args: &[&str]) -> String {
    let out = tool("curl")
        .args(["-sS", "--max-time", "30"])
        .args(args)
        .output()
        .expect("run curl");
    run(out, &format!("curl {args:?}"))
}

fn curl_http11_and_http10(model: &str) {
    let server = TestServer::start(model, &[]);
    let (a, b) = (server.url("/500B.html"), server.url("/bytes/10"));
    let w = "%{http_code} %{http_version} %{size_download} %{num_connects}\n";

    // HTTP/1.1: the second transfer reuses the connection.
    let out = curl(&[
        "--http1.1",
        "-o",
        "/dev/null",
        "-o",
        "/dev/null",
        "-w",
        w,
        &a,
        &b,
    ]);
    assert_eq!(out, "200 1.1 500 1\n200 1.1 10 0\n", "{model}");

    // HTTP/1.0: answered, each on its own connection.
    let out = curl(&[
        "--http1.0",
        "-o",
        "/dev/null",
        "-o",
        "/dev/null",
        "-w",
        w,
        &a,
        &b,
    ]);
    assert_eq!(out, "200 1.1 500 1\n200 1.1 10 1\n", "{model}");

    // Bodies: the embedded index, HEAD, and POSTs echoed back (a 2 MB
    // body makes curl send `Expect: 100-continue`; chunked upload too).
    let index = curl(&["--http1.0", &server.url("/")]);
    assert_eq!(index.len(), 1652);
    let head = curl(&["-I", &server.url("/")]);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("Content-Length: 1652\r\n"), "{head}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body.bin");
    let body: Vec<u8> = (0..2_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(&file, &body).unwrap();
    let data = format!("@{}", file.display());
    let echo = server.url("/echo");
    for extra in [
        &[][..],
        &["-H", "Transfer-Encoding: chunked"][..],
        &["--http1.0"][..],
    ] {
        let mut args = vec!["--data-binary", &data];
        args.extend_from_slice(extra);
        args.push(&echo);
        let out = curl(&args);
        assert!(out.as_bytes() == body, "{model}: echo {extra:?} differs");
    }
}

/// The numbers of one ab run that E1 reports.
#[derive(Debug, Default)]
pub struct AbReport {
    pub complete: u64,
    pub failed: u64,
    pub non_2xx: u64,
}

fn field<'a>(report: &'a str, name: &str) -> Option<&'a str> {
    report
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .map(|v| v.trim())
}

fn parse_ab(report: &str) -> AbReport {
    let num = |name: &str| {
        field(report, name).map(|v| {
            v.split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("{name} {v:?}"))
        })
    };
    AbReport {
        complete: num("Complete requests:").expect("Complete requests line"),
        failed: num("Failed requests:").expect("Failed requests line"),
        non_2xx: num("Non-2xx responses:").unwrap_or(0),
    }
}

fn ab_e1_rows_have_no_failures(model: &str) {
    let server = TestServer::start(model, &[]);
    let url = server.url("/500B.html");
    for c in E1_CONCURRENCY {
        let out = tool("ab")
            .args(["-n", "1000", "-c", &c.to_string(), "-s", "30", &url])
            .output()
            .expect("run ab");
        let report = run(out, &format!("ab -c {c} against {model}"));
        let r = parse_ab(&report);
        assert_eq!(r.complete, 1000, "{model} c={c}:\n{report}");
        assert_eq!(r.failed, 0, "{model} c={c}:\n{report}");
        assert!(
            !report.contains("Non-2xx responses:"),
            "{model} c={c}:\n{report}"
        );
        assert_eq!(r.non_2xx, 0);
        assert_eq!(
            field(&report, "Document Length:"),
            Some("500 bytes"),
            "{model} c={c}"
        );
    }
    assert_alive(&server);
}
