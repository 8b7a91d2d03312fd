//! `loadlab bench` against nginx, started by the test on a free loopback
//! port with a generated config in a temp dir (`.ci/run` installs it):
//! what nginx's access log saw is held against what bench reports.

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use common::bench::{bench_json, body_request, u};
use loadlab::proc::nginx::{Nginx, NginxOptions};

fn start_nginx(log: bool) -> (Nginx, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    loadlab::server::handlers::write_embedded_docroot(&root).unwrap();
    let mut opts = NginxOptions::new(&root, loadlab::server::LISTEN_BACKLOG);
    opts.workers = 2;
    if log {
        opts.access_log = Some(dir.path().join("access.log"));
    }
    (
        Nginx::start(&opts).expect("start nginx (installed by .ci/run)"),
        dir,
    )
}

/// One line of nginx's access log (the lab's `ll` format).
#[derive(Debug)]
struct Logged {
    connection: u64,
    status: u16,
    method: String,
    /// The request as nginx had received it when it logged it (line and
    /// head, and the body where a handler read it).
    request_length: u64,
}

/// nginx's access log, once it holds at least `expect` requests; nginx
/// writes it as each request completes, so give it a moment to land.
fn access_log(dir: &tempfile::TempDir, expect: usize) -> Vec<Logged> {
    let path = dir.path().join("access.log");
    for _ in 0..100 {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let rows: Vec<Logged> = text
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                Logged {
                    connection: f[0].parse().unwrap(),
                    status: f[2].parse().unwrap(),
                    method: f[3].to_string(),
                    request_length: f[5].parse().unwrap(),
                }
            })
            .collect();
        if rows.len() >= expect {
            return rows;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nginx logged fewer than {expect} requests");
}

fn connections(rows: &[Logged]) -> HashSet<u64> {
    rows.iter().map(|r| r.connection).collect()
}

#[test]
fn exact_request_counts_against_nginx_with_and_without_keepalive() {
    let (nginx, dir) = start_nginx(true);
    let url = nginx.url("/500B.html");
    let r = bench_json(&["-n", "1000", "-c", "10", &url]);
    assert_eq!(u(&r, "/complete"), 1000);
    assert_eq!(u(&r, "/failed"), 0);
    assert_eq!(u(&r, "/document_length"), 500);
    assert_eq!(u(&r, "/bytes/html_received"), 500_000);
    let rows = access_log(&dir, 1000);
    assert_eq!(rows.len(), 1000, "nginx saw exactly -n requests");
    assert_eq!(
        connections(&rows).len(),
        1000,
        "without -k every request has its own connection"
    );

    let r = bench_json(&["-n", "1000", "-c", "10", "-k", &url]);
    assert_eq!(u(&r, "/complete"), 1000);
    assert_eq!(u(&r, "/keep_alive_requests"), 1000);
    let rows = access_log(&dir, 2000);
    assert_eq!(rows.len(), 2000);
    let conns = connections(&rows[1000..]);
    assert!(
        conns.len() <= 10,
        "with -k the 10 connections are reused, got {}",
        conns.len()
    );
}

#[test]
fn post_and_put_bodies_reach_nginx_whole_on_kept_alive_connections() {
    // nginx serves no POST or PUT on a static file: it logs a 405 with the
    // request's line and head, then reads the body off the connection and
    // keeps it. Every request of a kept-alive connection after the first
    // is parsed right only if the one before it sent exactly its
    // Content-Length of body: a short or overlong body would turn the
    // next request line into a 400.
    let (nginx, dir) = start_nginx(true);
    let body_dir = tempfile::tempdir().unwrap();
    let body = body_dir.path().join("body.bin");
    std::fs::write(&body, vec![b'z'; 3000]).unwrap();
    let url = nginx.url("/500B.html");
    let mut logged = 0;
    for (flag, method) in [("-p", "POST"), ("-u", "PUT")] {
        let r = bench_json(&[
            "-n",
            "200",
            "-c",
            "4",
            "-k",
            flag,
            body.to_str().unwrap(),
            "-T",
            "application/x-test",
            &url,
        ]);
        assert_eq!(u(&r, "/complete"), 200, "{flag}");
        assert_eq!(u(&r, "/failed"), 0, "{flag}: {}", r["errors"]);
        assert_eq!(u(&r, "/non_2xx"), 200, "{flag}");
        assert_eq!(u(&r, "/status_classes/4xx"), 200, "{flag}");
        assert_eq!(u(&r, "/keep_alive_requests"), 200, "{flag}");
        let request_len = body_request(method, &[b'z'; 3000], &url);
        assert_eq!(
            u(&r, "/bytes/body_sent"),
            200 * request_len as u64,
            "{flag}"
        );

        let rows = access_log(&dir, logged + 200);
        let rows = &rows[logged..];
        logged += 200;
        assert_eq!(rows.len(), 200, "{flag}: nginx saw exactly -n requests");
        for row in rows {
            assert_eq!(
                (row.method.as_str(), row.status),
                (method, 405),
                "{flag}: {row:?}"
            );
            assert_eq!(
                row.request_length,
                request_len as u64 - 3000,
                "{flag}: nginx logs the line and head it parsed: {row:?}"
            );
        }
        assert!(
            connections(rows).len() <= 4,
            "{flag}: the 4 connections were kept, got {}",
            connections(rows).len()
        );
    }
}

#[test]
fn nginx_error_answers_are_non_2xx_not_failures() {
    let (nginx, dir) = start_nginx(true);
    let r = bench_json(&["-n", "300", "-c", "3", &nginx.url("/no-such-file.html")]);
    assert_eq!(u(&r, "/complete"), 300);
    assert_eq!(u(&r, "/failed"), 0, "{}", r["errors"]);
    assert_eq!(u(&r, "/non_2xx"), 300);
    assert_eq!(u(&r, "/status_classes/4xx"), 300);
    let rows = access_log(&dir, 300);
    assert!(rows.iter().all(|r| r.status == 404), "{:?}", rows[0]);
}

#[test]
fn five_thousand_concurrent_connections_to_nginx() {
    let (nginx, dir) = start_nginx(true);
    let r = bench_json(&["-n", "5000", "-c", "5000", &nginx.url("/500B.html")]);
    assert_eq!(u(&r, "/complete"), 5000);
    assert_eq!(u(&r, "/failed"), 0, "{}", r["errors"]);
    assert_eq!(r["run"]["concurrency"], 5000);
    let rows = access_log(&dir, 5000);
    assert_eq!(rows.len(), 5000);
    assert!(rows.iter().all(|r| r.status == 200));
    assert_eq!(connections(&rows).len(), 5000);
}
