//! `loadlab bench` over https against nginx, with a CA and a certificate
//! the test generates (rcgen): verification by --cacert, SSL_CERT_FILE or
//! not at all (--insecure), ab's -f/-Z/-I, and ab's TLS report lines.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::loadlab_bin;
use common::tls::TlsNginx;
use serde_json::Value;

/// Runs `loadlab bench ARGS...` with SSL_CERT_FILE set to `cert_file` or
/// unset: (stdout, stderr, exit code).
fn bench(args: &[&str], cert_file: Option<&Path>) -> (String, String, i32) {
    let mut cmd = Command::new(loadlab_bin());
    cmd.arg("bench").args(args).env_remove("SSL_CERT_DIR");
    match cert_file {
        Some(f) => cmd.env("SSL_CERT_FILE", f),
        None => cmd.env_remove("SSL_CERT_FILE"),
    };
    let out = cmd.output().expect("run loadlab bench");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn json(args: &[&str], cert_file: Option<&Path>) -> (Value, String, i32) {
    let mut all = args.to_vec();
    all.extend(["--format", "json", "-q"]);
    let (out, err, code) = bench(&all, cert_file);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("JSON: {e}; {err}"));
    (v, err, code)
}

fn n(v: &Value, ptr: &str) -> u64 {
    v.pointer(ptr)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{ptr} missing in {v}"))
}

#[test]
fn https_with_cacert_passes_with_and_without_keepalive() {
    let s = TlsNginx::start();
    let (ca, url) = (s.ca(), s.url("/500B.html"));
    let ca = ca.to_str().unwrap();
    for ka in [false, true] {
        let mut args = vec!["-n", "300", "-c", "4", "--cacert", ca, &url];
        if ka {
            args.insert(0, "-k");
        }
        let (v, err, code) = json(&args, None);
        assert_eq!(code, 0, "-k {ka}: {err}");
        assert_eq!(n(&v, "/complete"), 300, "-k {ka}");
        assert_eq!(n(&v, "/failed"), 0, "-k {ka}: {}", v["errors"]);
        assert_eq!(n(&v, "/bytes/html_received"), 300 * 500, "-k {ka}");
        let kept = n(&v, "/keep_alive_requests");
        assert_eq!(kept > 0, ka, "-k {ka}: {kept} kept-alive requests");
        assert_eq!(v["tls"]["server_name"], "localhost", "SNI is sent");
        assert!(
            v["tls"]["protocol"]
                .as_str()
                .unwrap()
                .starts_with("TLSv1.3,TLS13_"),
            "both sides prefer TLS 1.3: {}",
            v["tls"]
        );
        // The handshake is part of connecting: a connection per request
        // pays it every time, a kept-alive run about once per connection.
        assert!(n(&v, "/connect_ms/count") == 300, "{}", v["connect_ms"]);
        // The `tls` object is part of the published schema.
        let errs = common::schema::validate("bench-v3.schema.json", &v);
        assert!(errs.is_empty(), "{errs:#?}");
    }
}

#[test]
fn https_is_verified_by_default_and_ssl_cert_file_names_a_private_ca() {
    let s = TlsNginx::start();
    let url = s.url("/500B.html");
    for ka in [false, true] {
        let mut args = vec!["-n", "50", "-c", "2", url.as_str()];
        if ka {
            args.insert(0, "-k");
        }
        // The system store does not know the test's CA: every request
        // fails, each saying why, and the run measured nothing usable.
        let (v, err, code) = json(&args, None);
        assert_eq!(code, 1, "{err}");
        assert_eq!(n(&v, "/failed"), 50, "-k {ka}");
        assert_eq!(n(&v, "/failures/connect"), 50, "-k {ka}");
        let errors = v["errors"].as_object().unwrap();
        assert_eq!(errors.len(), 1, "{errors:?}");
        let (why, count) = errors.iter().next().unwrap();
        assert!(
            why.contains("invalid peer certificate") && why.contains("UnknownIssuer"),
            "{why}"
        );
        assert_eq!(count, 50);
        assert!(v.get("tls").is_none(), "no session was made: {}", v["tls"]);
        // SSL_CERT_FILE replaces the system store, as in OpenSSL.
        let (v, err, code) = json(&args, Some(&s.ca()));
        assert_eq!((code, n(&v, "/failed")), (0, 0), "-k {ka}: {err}");
    }
}

#[test]
fn insecure_skips_verification() {
    let s = TlsNginx::start();
    let url = s.url("/500B.html");
    for ka in [&[][..], &["-k"][..]] {
        let mut args = ka.to_vec();
        args.extend(["-n", "100", "-c", "2", "--insecure", &url]);
        let (v, err, code) = json(&args, None);
        assert_eq!((code, n(&v, "/failed")), (0, 0), "{ka:?}: {err}");
        assert_eq!(n(&v, "/complete"), 100);
    }
}

#[test]
fn f_tls12_negotiates_tls12_and_the_report_shows_abs_tls_lines() {
    let s = TlsNginx::start();
    let (ca, url) = (s.ca(), s.url("/"));
    let ca = ca.to_str().unwrap();
    let (out, err, code) = bench(&["-n", "20", "-f", "TLS1.2", "--cacert", ca, &url], None);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("Server Port:"))
        .unwrap();
    // ab's order and spelling, right under Server Port; the suite by its
    // IANA name (rustls's), where ab shows OpenSSL's.
    assert_eq!(
        lines[at + 1],
        "SSL/TLS Protocol:       TLSv1.2,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,256,256"
    );
    assert!(
        lines[at + 2].starts_with("Server Temp Key:        "),
        "{out}"
    );
    assert!(lines[at + 2].ends_with(" bits"), "{out}");
    assert_eq!(lines[at + 3], "TLS Server Name:        localhost");
    assert_eq!(lines[at + 4], "");
    assert!(out.contains("Failed requests:        0\n"), "{out}");
    // -Z picks the suite (OpenSSL's name accepted); -I leaves SNI out, and
    // the report its line.
    let z = "ECDHE-ECDSA-CHACHA20-POLY1305";
    let args = [
        "-n", "5", "-I", "-f", "TLS1.2", "-Z", z, "--cacert", ca, &url,
    ];
    let (out, err, code) = bench(&args, None);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("TLSv1.2,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,256,256\n"),
        "{out}"
    );
    assert!(!out.contains("TLS Server Name"), "{out}");
    let (out, err, code) = bench(&["-n", "5", "-f", "TLS1.3", "--cacert", ca, &url], None);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("SSL/TLS Protocol:       TLSv1.3,TLS13_"),
        "{out}"
    );
}

#[test]
fn refused_tls_options_are_one_line_and_exit_2() {
    let url = "https://127.0.0.1:9/";
    for args in [
        &["-f", "SSL3", url][..],
        &["-f", "TLS1.1", url],
        &["-f", "TLS9", url],
        &["-Z", "RC4-MD5", url],
        &["-Z", "TLS_AES_128_GCM_SHA256", "-f", "TLS1.2", url],
        &["--cacert", "/nonexistent/ca.pem", url],
        // The slow connections speak plain TCP: not to a TLS port.
        &["--slow", "header", "--insecure", url],
    ] {
        let (out, err, code) = bench(args, None);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
    }
}

/// A sweep's `url:https://` target is measured like bench's, verified
/// against SSL_CERT_FILE (a sweep has no --cacert); without the CA every
/// request fails and the sweep says it measured nothing usable.
#[test]
fn a_sweep_measures_a_url_https_target() {
    let s = TlsNginx::start();
    let dir = tempfile::tempdir().unwrap();
    let target = format!("url:{}", s.url("/500B.html"));
    let sweep = |out: &Path, ca: Option<&Path>| {
        let mut cmd = Command::new(loadlab_bin());
        cmd.args(["sweep", "-q", "-T", &target, "--concurrency", "2"])
            .args(["--requests", "40", "--repeat", "1", "--out"])
            .arg(out)
            .env_remove("SSL_CERT_DIR");
        match ca {
            Some(f) => cmd.env("SSL_CERT_FILE", f),
            None => cmd.env_remove("SSL_CERT_FILE"),
        };
        let o = cmd.output().expect("run loadlab sweep");
        (
            String::from_utf8_lossy(&o.stderr).into_owned(),
            o.status.code(),
        )
    };
    let out = dir.path().join("ok");
    let (err, code) = sweep(&out, Some(&s.ca()));
    assert_eq!(code, Some(0), "{err}");
    let rows = loadlab::results::raw::read(&out).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    assert_eq!(
        r.target,
        format!("url:https://localhost:{}", s.nginx.addr.port())
    );
    assert_eq!((r.complete, r.failed, r.non_2xx), (40, 0, 0), "{r:?}");
    assert_eq!(r.html_bytes, 40 * 500);
    let (err, code) = sweep(&dir.path().join("unverified"), None);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("measured nothing usable"), "{err}");
}

/// Bodies larger than the socket buffers and than rustls's own buffers
/// cross TLS whole both ways: a 1 MiB download spans many records and
/// many reads; a 300 KB upload is taken by rustls in pieces and may
/// outrun the socket's room, when its last records wait in rustls.
#[test]
fn large_bodies_cross_tls_whole_in_both_directions() {
    let s = TlsNginx::start();
    let big = vec![b'x'; 1 << 20];
    std::fs::write(s.dir.path().join("root/1MiB.bin"), &big).unwrap();
    let post = s.dir.path().join("post.bin");
    std::fs::write(&post, vec![b'y'; 300_000]).unwrap();
    let (ca, get_url, post_url) = (s.ca(), s.url("/1MiB.bin"), s.url("/500B.html"));
    let (ca, post) = (ca.to_str().unwrap(), post.to_str().unwrap());
    for ka in [&[][..], &["-k"][..]] {
        let mut args = ka.to_vec();
        args.extend(["-n", "20", "-c", "2", "--cacert", ca, &get_url]);
        let (v, err, code) = json(&args, None);
        assert_eq!(
            (code, n(&v, "/failed")),
            (0, 0),
            "{ka:?}: {err} {}",
            v["errors"]
        );
        assert_eq!(n(&v, "/bytes/html_received"), 20 << 20, "{ka:?}");
        // nginx answers a POST to a static file with 405, after reading
        // (or discarding) the whole body: every request completes.
        let mut args = ka.to_vec();
        args.extend(["-n", "10", "-c", "2", "-p", post, "--cacert", ca, &post_url]);
        let (v, err, _) = json(&args, None);
        assert_eq!(n(&v, "/complete"), 10, "{ka:?}: {err}");
        assert_eq!(n(&v, "/failed"), 0, "{ka:?}: {}", v["errors"]);
        assert!(n(&v, "/bytes/body_sent") > 10 * 300_000, "{ka:?}");
    }
}
