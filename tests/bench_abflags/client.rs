//! The client side of ab's flags: a proxy for http (absolute-form) and
//! https (CONNECT), with -P's credentials; -B's local address as the
//! server sees it; -b's socket buffers; -E's client certificate.

use super::proxy::RecordingProxy;
use crate::common::bench::{bench_json, bench_text, u};
use crate::common::tls::TlsNginx;
use crate::common::*;

/// base64("alice:s3cret"), as Basic credentials carry it.
const ALICE: &str = "Basic YWxpY2U6czNjcmV0";

#[test]
fn x_sends_absolute_form_requests_to_the_proxy_with_p_credentials() {
    let server = TestServer::start("event-loop", &[]);
    let proxy = RecordingProxy::start(addr_of(&server));
    let x = proxy.addr.to_string();
    let url = server.url("/500B.html");
    let v = bench_json(&["-n", "30", "-c", "3", "-X", &x, "-P", "alice:s3cret", &url]);
    assert_eq!(u(&v, "/complete"), 30);
    assert_eq!(u(&v, "/failed"), 0, "{}", v["errors"]);
    assert_eq!(u(&v, "/status_classes/2xx"), 30);
    assert_eq!(u(&v, "/bytes/html_received"), 30 * 500);
    let seen = proxy.seen();
    assert_eq!(
        seen.len(),
        30,
        "one connection, one request each without -k"
    );
    for s in &seen {
        assert_eq!(s.line(), format!("GET {url} HTTP/1.0"), "absolute form");
        assert_eq!(s.header("proxy-authorization"), Some(ALICE));
        assert_eq!(s.header("host"), Some(&url[7..url.len() - 10]));
    }
    // The report names the server, not the proxy, as ab's does.
    let (out, err, code) = bench_text(&["-q", "-n", "2", "-X", &x, &url]);
    assert_eq!(code, 0, "{err}");
    let port = format!("Server Port:            {}", server.port());
    assert!(out.contains(&port), "{out}");
    // -P without -X, and --slow (which goes to the server directly) with
    // it, are refused in one line.
    for bad in [
        vec!["-n", "1", "-P", "a:b", url.as_str()],
        vec![
            "-n",
            "1",
            "--slow",
            "header",
            "-X",
            x.as_str(),
            url.as_str(),
        ],
    ] {
        let (_, err, code) = bench_text(&bad);
        assert_eq!(code, 2, "{bad:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn x_tunnels_https_through_connect_and_keeps_p_out_of_the_tunnel() {
    let s = TlsNginx::start();
    let proxy = RecordingProxy::start(s.nginx.addr);
    let (ca, url) = (s.ca(), s.url("/500B.html"));
    let x = proxy.addr.to_string();
    for ka in [false, true] {
        let before = proxy.seen().len();
        let mut args = vec!["-n", "20", "-c", "2", "--cacert", ca.to_str().unwrap()];
        args.extend(["-X", &x, "-P", "alice:s3cret", &url]);
        if ka {
            args.insert(0, "-k");
        }
        let v = bench_json(&args);
        assert_eq!(u(&v, "/failed"), 0, "-k {ka}: {}", v["errors"]);
        assert_eq!(u(&v, "/status_classes/2xx"), 20, "-k {ka}");
        assert_eq!(
            v["tls"]["server_name"], "localhost",
            "SNI inside the tunnel"
        );
        let seen = &proxy.seen()[before..];
        // A tunnel per connection: one per request without -k, at most
        // one per concurrent connection with it (more only if nginx
        // closed one).
        match ka {
            false => assert_eq!(seen.len(), 20),
            true => assert!((2..20).contains(&seen.len()), "{}", seen.len()),
        }
        let authority = format!("localhost:{}", s.nginx.addr.port());
        for r in seen {
            assert_eq!(r.line(), format!("CONNECT {authority} HTTP/1.0"));
            assert_eq!(r.header("proxy-authorization"), Some(ALICE));
        }
    }
}

#[test]
fn a_proxy_that_refuses_the_tunnel_fails_every_request_as_connect() {
    // A plain http server as the "proxy": it answers CONNECT with an error.
    let s = TlsNginx::start();
    let not_a_proxy = TestServer::start("event-loop", &[]);
    let x = format!("127.0.0.1:{}", not_a_proxy.port());
    let ca = s.ca();
    let url = s.url("/500B.html");
    let (out, err, code) = bench_text(&[
        "-q",
        "--format",
        "json",
        "-n",
        "4",
        "--cacert",
        ca.to_str().unwrap(),
        "-X",
        &x,
        &url,
    ]);
    assert_eq!(code, 1, "nothing usable: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(u(&v, "/failures/connect"), 4, "{}", v["errors"]);
    let errors = v["errors"].to_string();
    assert!(errors.contains("CONNECT refused with status"), "{errors}");
}

#[test]
fn big_b_binds_client_sockets_to_the_local_address() {
    let server = TestServer::start("event-loop", &[]);
    // The proxy in front of the server records the peer it was called from.
    let front = RecordingProxy::start(addr_of(&server));
    let url = format!("http://{}/500B.html", front.addr);
    let v = bench_json(&["-n", "10", "-c", "2", "-B", "127.0.0.2", &url]);
    assert_eq!(u(&v, "/status_classes/2xx"), 10, "{}", v["errors"]);
    let seen = front.seen();
    assert_eq!(seen.len(), 10);
    assert!(
        seen.iter().all(|s| s.peer.ip().to_string() == "127.0.0.2"),
        "{seen:?}"
    );
    // An address not on this host is refused before any load.
    let (_, err, code) = bench_text(&["-n", "1", "-B", "192.0.2.1", &url]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("-B 192.0.2.1") && err.trim().lines().count() == 1,
        "{err}"
    );
}

#[test]
fn small_b_socket_buffers_still_move_a_large_response_whole() {
    // -b's effect on a socket is checked where the socket is made (the
    // engine's dial test reads SO_RCVBUF back); here the flag goes end to
    // end: 256 KiB through 4 KiB buffers, with and without keep-alive.
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/bytes/262144");
    for ka in [false, true] {
        let mut args = vec!["-n", "8", "-c", "2", "-b", "4096", &url];
        if ka {
            args.insert(0, "-k");
        }
        let v = bench_json(&args);
        assert_eq!(u(&v, "/failed"), 0, "-k {ka}: {}", v["errors"]);
        assert_eq!(u(&v, "/bytes/html_received"), 8 * 262144, "-k {ka}");
    }
    for bad in ["0", "-5", "x"] {
        let (_, err, code) = bench_text(&["-n", "1", "-b", bad, &url]);
        assert_eq!(code, 2, "-b {bad}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn big_e_client_certificate_passes_nginx_ssl_verify_client() {
    let s = TlsNginx::start_verifying_clients();
    let (ca, cert, url) = (s.ca(), s.client_pem(), s.url("/500B.html"));
    let (ca, cert) = (ca.to_str().unwrap(), cert.to_str().unwrap());
    for ka in [false, true] {
        let mut args = vec!["-n", "20", "-c", "2", "--cacert", ca, "-E", cert, &url];
        if ka {
            args.insert(0, "-k");
        }
        let v = bench_json(&args);
        assert_eq!(u(&v, "/status_classes/2xx"), 20, "-k {ka}: {}", v["errors"]);
    }
    // Without it nginx answers every request 400 ("No required SSL
    // certificate was sent"): nothing usable, exit 1.
    let v = bench_json(&["-n", "10", "-c", "2", "--cacert", ca, &url]);
    assert_eq!(u(&v, "/status_classes/4xx"), 10);
    assert_eq!(u(&v, "/status_classes/2xx"), 0);
    // A file without a key, or -E on http, is refused in one line.
    let (_, err, code) = bench_text(&["-n", "1", "--cacert", ca, "-E", ca, &url]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no private key") && err.trim().lines().count() == 1,
        "{err}"
    );
    let (_, err, code) = bench_text(&["-n", "1", "-E", cert, "http://127.0.0.1:9/"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-E"), "{err}");
}

fn addr_of(server: &TestServer) -> std::net::SocketAddr {
    ([127, 0, 0, 1], server.port()).into()
}
