//! The file service under /files/, every rule against every model: one
//! suite, instantiated per model by `per_model!`. Each test starts its own
//! `loadlab serve` on 127.0.0.1:0 with its own upload directory and talks
//! to it with raw sockets or real curl.

#[macro_use]
mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use sha2::{Digest, Sha256};

/// A server with an upload directory `root/files` (so escapes into `root`
/// can be checked) that both live as long as this value.
struct Env {
    server: TestServer,
    root: tempfile::TempDir,
}

impl Env {
    fn start(model: &str, extra: &[&str]) -> Env {
        let root = tempfile::tempdir().unwrap();
        let files = root.path().join("files");
        let files_arg = files.to_str().unwrap().to_string();
        let mut args = vec!["--files", files_arg.as_str()];
        args.extend_from_slice(extra);
        let server = TestServer::start(model, &args);
        Env { server, root }
    }

    fn dir(&self) -> PathBuf {
        self.root.path().join("files")
    }

    /// Names in the upload directory, temporary files included, sorted.
    fn entries(&self) -> Vec<String> {
        entries(&self.dir())
    }

    fn request(&self, raw: &[u8]) -> RawResponse {
        exchange(&self.server, raw)
    }

    fn put(&self, name: &str, body: &[u8]) -> RawResponse {
        let mut req = format!(
            "PUT /files/{name} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        self.request(&req)
    }

    fn get(&self, target: &str, extra_headers: &str) -> RawResponse {
        self.request(
            format!("GET {target} HTTP/1.1\r\nHost: t\r\n{extra_headers}Connection: close\r\n\r\n")
                .as_bytes(),
        )
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Any name that starts like the service's temporary files: broader than
/// the exact shape, so a leftover of another shape is caught too.
fn is_temp(name: &str) -> bool {
    name.starts_with(loadlab::results::files::TEMP_PREFIX)
}

fn sha_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn json(r: &RawResponse) -> serde_json::Value {
    serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&r.body)))
}

/// Deterministic test content, different per seed.
fn data(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u32)
                .wrapping_mul(2_654_435_761)
                .rotate_left(seed as u32) as u8
                ^ seed
        })
        .collect()
}

fn listing_names(env: &Env, query: &str) -> Vec<String> {
    let r = env.get(&format!("/files/{query}"), "");
    assert_eq!(r.status, 200);
    json(&r)["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

// ---------------------------------------------------------------- tests

fn listing_is_sorted_json_with_times(model: &str) {
    let env = Env::start(model, &[]);
    assert_eq!(listing_names(&env, ""), Vec::<String>::new());
    assert_eq!(env.put("b.txt", b"abc").status, 201);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(env.put("a.bin", &[7u8; 100]).status, 201);
    let r = env.get("/files/", "");
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = json(&r);
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["name"], "a.bin");
    assert_eq!(files[0]["size"], 100);
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for f in files {
        let ms = f["modified_ms"].as_i64().unwrap();
        assert!((now_ms - ms).abs() < 60_000, "{f}");
        let t = f["modified"].as_str().unwrap();
        assert!(
            t.len() == 24 && t.ends_with('Z') && &t[10..11] == "T",
            "{t}"
        );
    }
    assert_eq!(listing_names(&env, "?sort=size"), ["b.txt", "a.bin"]);
    assert_eq!(listing_names(&env, "?sort=mtime"), ["b.txt", "a.bin"]);
    assert_eq!(
        listing_names(&env, "?sort=name&order=desc"),
        ["b.txt", "a.bin"]
    );
    assert_eq!(env.get("/files", "").status, 200);
    assert_eq!(env.get("/files/?sort=colour", "").status, 400);
    let r = env.request(b"DELETE /files/ HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(r.status, 405);
}

fn put_creates_then_replaces(model: &str) {
    let env = Env::start(model, &[]);
    let first = data(1, 70_000);
    let r = env.put("f.bin", &first);
    assert_eq!(r.status, 201);
    assert_eq!(r.header("location"), Some("/files/f.bin"));
    let v = json(&r);
    assert_eq!(v["name"], "f.bin");
    assert_eq!(v["size"], first.len());
    assert_eq!(v["sha256"], sha_hex(&first));
    let second = data(2, 5_000);
    let r = env.put("f.bin", &second);
    assert_eq!(r.status, 200, "replacing answers 200");
    assert_eq!(json(&r)["sha256"], sha_hex(&second));
    assert_eq!(env.get("/files/f.bin", "").body, second);
    // POST uploads too: 201 for a new name, 200 when it replaces one.
    let post = |body: &str| {
        env.request(
            format!(
                "POST /files/p.txt HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
    };
    assert_eq!(post("hi").status, 201);
    let r = post("hello");
    assert_eq!(r.status, 200, "POST replacing answers 200");
    assert_eq!(json(&r)["sha256"], sha_hex(b"hello"));
    assert_eq!(env.get("/files/p.txt", "").body, b"hello");
    // An empty body makes an empty file.
    assert_eq!(env.put("empty", b"").status, 201);
    assert_eq!(std::fs::metadata(env.dir().join("empty")).unwrap().len(), 0);
    assert_eq!(env.entries(), ["empty", "f.bin", "p.txt"]);
}

fn chunked_upload_is_stored_whole(model: &str) {
    let env = Env::start(model, &[]);
    let body = data(3, 50_000);
    let mut req =
        b"PUT /files/c.bin HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            .to_vec();
    for piece in body.chunks(7_000) {
        req.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        req.extend_from_slice(piece);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let r = env.request(&req);
    assert_eq!(r.status, 201);
    assert_eq!(json(&r)["sha256"], sha_hex(&body));
    assert_eq!(std::fs::read(env.dir().join("c.bin")).unwrap(), body);
}

fn get_and_head_carry_validators_and_304(model: &str) {
    let env = Env::start(model, &[]);
    let body = data(4, 3_000);
    env.put("v.html", &body);
    let r = env.get("/files/v.html", "");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, body);
    assert_eq!(r.header("content-length"), Some("3000"));
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
    let etag = r.header("etag").unwrap().to_string();
    let lm = r.header("last-modified").unwrap().to_string();
    let h = env.request(b"HEAD /files/v.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(h.status, 200);
    assert_eq!(h.header("content-length"), Some("3000"));
    assert_eq!(h.header("etag"), Some(etag.as_str()));
    assert_eq!(h.header("last-modified"), Some(lm.as_str()));
    assert!(h.body.is_empty());
    // Last-Modified is the file's mtime as an HTTP date (whole seconds).
    let mtime = std::fs::metadata(env.dir().join("v.html"))
        .unwrap()
        .modified()
        .unwrap();
    let secs =
        |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(
        secs(httpdate::parse_http_date(&lm).unwrap()),
        secs(mtime),
        "{lm}"
    );
    let h = env.request(
        format!("HEAD /files/v.html HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: {lm}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(h.status, 304);
    let r = env.get("/files/v.html", &format!("If-None-Match: {etag}\r\n"));
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty());
    let r = env.get("/files/v.html", &format!("If-Modified-Since: {lm}\r\n"));
    assert_eq!(r.status, 304);
    let r = env.get("/files/v.html", "If-None-Match: \"other\"\r\n");
    assert_eq!(r.status, 200);
    // A replaced file gets a new tag.
    env.put("v.html", &data(5, 3_000));
    let r = env.get("/files/v.html", &format!("If-None-Match: {etag}\r\n"));
    assert_eq!(r.status, 200);
    assert_ne!(r.header("etag"), Some(etag.as_str()));
    assert_eq!(env.get("/files/missing", "").status, 404);
    // A method the server implements nowhere is 501, not 405 (RFC 9110
    // 15.6.2); every method it does implement is allowed on a file.
    let r = env.request(b"PATCH /files/v.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(r.status, 501);
}

fn single_ranges_206_and_416(model: &str) {
    let env = Env::start(model, &[]);
    let body = data(6, 1000);
    env.put("r.bin", &body);
    let r = env.get("/files/r.bin", "Range: bytes=10-19\r\n");
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-range"), Some("bytes 10-19/1000"));
    assert_eq!(r.body, body[10..20]);
    let r = env.get("/files/r.bin", "Range: bytes=-5\r\n");
    assert_eq!(r.status, 206);
    assert_eq!(r.body, body[995..]);
    let r = env.get("/files/r.bin", "Range: bytes=990-5000\r\n");
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-range"), Some("bytes 990-999/1000"));
    assert_eq!(r.body, body[990..]);
    let r = env.get("/files/r.bin", "Range: bytes=1000-\r\n");
    assert_eq!(r.status, 416);
    assert_eq!(r.header("content-range"), Some("bytes */1000"));
    // Several ranges may be ignored: the whole file.
    let r = env.get("/files/r.bin", "Range: bytes=0-1,5-6\r\n");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, body);
    // If-Range with another version's tag: the whole file.
    let r = env.get("/files/r.bin", "Range: bytes=0-1\r\nIf-Range: \"old\"\r\n");
    assert_eq!(r.status, 200);
    // Real curl agrees.
    let out = tool("curl")
        .args(["-s", "-r", "100-199", &env.server.url("/files/r.bin")])
        .output()
        .unwrap();
    assert_eq!(out.stdout, body[100..200]);
}

fn sha256_query_returns_the_digest(model: &str) {
    let env = Env::start(model, &[]);
    let body = data(7, 300_000);
    env.put("d.bin", &body);
    let r = env.get("/files/d.bin?sha256", "");
    assert_eq!(r.status, 200);
    let v = json(&r);
    assert_eq!(v["sha256"], sha_hex(&body));
    assert_eq!(v["size"], body.len());
    assert_eq!(env.get("/files/nope?sha256", "").status, 404);
}

fn delete_204_then_404(model: &str) {
    let env = Env::start(model, &[]);
    env.put("x", b"1");
    let del = b"DELETE /files/x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let r = env.request(del);
    assert_eq!(r.status, 204);
    assert!(env.entries().is_empty());
    assert_eq!(env.request(del).status, 404);
    assert_eq!(env.get("/files/x", "").status, 404);
}

fn bad_names_are_400_and_touch_nothing(model: &str) {
    let env = Env::start(model, &[]);
    std::fs::write(env.root.path().join("secret"), b"outside").unwrap();
    let long = "n".repeat(256);
    let targets = [
        "/files/..%2fsecret",
        "/files/..",
        "/files/%2e%2e",
        "/files/%2E%2E%2Fsecret",
        "/files/.",
        "/files/.hidden",
        "/files/a/b",
        "/files/%2fetc%2fpasswd",
        "/files/a%5cb",
        "/files/a%00b",
        "/files/a%0ab",
        "/files/a%1bb",
        "/files/a%7f",
        "/files/%c0%ae%c0%ae",
        "/files/%zz",
        &format!("/files/{long}"),
    ];
    for t in targets {
        for method in ["GET", "PUT", "DELETE"] {
            let r = env.request(
                format!("{method} {t} HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
                    .as_bytes(),
            );
            assert_eq!(r.status, 400, "{method} {t}");
        }
    }
    assert!(env.entries().is_empty(), "{:?}", env.entries());
    assert_eq!(entries(env.root.path()), ["files", "secret"]);
    assert_eq!(
        std::fs::read(env.root.path().join("secret")).unwrap(),
        b"outside"
    );
    // A 255-byte name is fine.
    assert_eq!(env.put(&"n".repeat(255), b"ok").status, 201);
}

fn symlinks_are_not_followed(model: &str) {
    let env = Env::start(model, &[]);
    let outside = env.root.path().join("outside.txt");
    std::fs::write(&outside, b"secret").unwrap();
    std::os::unix::fs::symlink(&outside, env.dir().join("link")).unwrap();
    assert_eq!(env.get("/files/link", "").status, 404);
    assert!(listing_names(&env, "").is_empty());
    // Uploading over the link replaces the link, not the target.
    assert_eq!(env.put("link", b"new").status, 200);
    assert_eq!(std::fs::read(&outside).unwrap(), b"secret");
    assert_eq!(std::fs::read(env.dir().join("link")).unwrap(), b"new");
}

fn over_max_upload_is_413_before_writing(model: &str) {
    let env = Env::start(model, &["--max-upload", "1K"]);
    assert_eq!(env.put("ok", &[1u8; 1024]).status, 201);
    assert_eq!(env.put("big", &[1u8; 1025]).status, 413);
    // With Expect: 100-continue the client is told before sending anything.
    let mut s = env.server.connect();
    s.write_all(b"PUT /files/big HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().status, 413);
    // Chunked: refused once the limit is crossed, and nothing is kept.
    let mut req =
        b"PUT /files/big HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..3 {
        req.extend_from_slice(b"200\r\n");
        req.extend_from_slice(&[2u8; 0x200]);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    assert_eq!(env.request(&req).status, 413);
    assert!(
        wait_until(Duration::from_secs(5), || env.entries() == ["ok"]),
        "{:?}",
        env.entries()
    );
}

fn body_cut_off_leaves_no_file(model: &str) {
    let env = Env::start(model, &[]);
    let mut s = env.server.connect();
    s.write_all(b"PUT /files/cut.bin HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n")
        .unwrap();
    s.write_all(&data(8, 100_000)).unwrap();
    // The upload is in progress: a temporary file, not the name.
    assert!(
        wait_until(Duration::from_secs(10), || env
            .entries()
            .iter()
            .any(|n| is_temp(n))),
        "no temporary file appeared: {:?}",
        env.entries()
    );
    assert!(!env.dir().join("cut.bin").exists());
    drop(s);
    assert!(
        wait_until(Duration::from_secs(10), || env.entries().is_empty()),
        "left behind: {:?}",
        env.entries()
    );
    assert_alive(&env.server);
}

fn killed_client_leaves_no_file(model: &str) {
    let env = Env::start(model, &[]);
    // curl uploads stdin with chunked encoding; it is killed mid-body.
    let mut curl = tool("curl")
        .args(["-s", "-T", "-", &env.server.url("/files/killed.bin")])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = curl.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = data(9, 64 * 1024);
        for _ in 0..4 {
            if stdin.write_all(&chunk).is_err() {
                return;
            }
        }
        // Keep the pipe open (curl waits for more) until the test ends it.
        std::thread::sleep(Duration::from_secs(20));
    });
    assert!(
        wait_until(Duration::from_secs(10), || env
            .entries()
            .iter()
            .any(|n| is_temp(n))),
        "no temporary file appeared: {:?}",
        env.entries()
    );
    curl.kill().unwrap();
    curl.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || env.entries().is_empty()),
        "left behind: {:?}",
        env.entries()
    );
    assert_alive(&env.server);
    drop(writer);
}

fn concurrent_same_name_uploads_give_one_whole_file(model: &str) {
    let env = Env::start(model, &[]);
    const N: usize = 4;
    const LEN: usize = 120_000;
    let bodies: Vec<Vec<u8>> = (0..N).map(|i| data(10 + i as u8, LEN)).collect();
    let halfway = AtomicUsize::new(0);
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let hs: Vec<_> = bodies
            .iter()
            .map(|body| {
                let (env, halfway) = (&env, &halfway);
                s.spawn(move || {
                    let mut c = env.server.connect();
                    c.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
                    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                    let head = format!(
                        "PUT /files/same.bin HTTP/1.1\r\nHost: t\r\nContent-Length: {LEN}\r\nConnection: close\r\n\r\n"
                    );
                    c.write_all(head.as_bytes()).unwrap();
                    c.write_all(&body[..LEN / 2]).unwrap();
                    // Interleave: everyone is halfway before anyone finishes
                    // (bounded, since a one-at-a-time server reads one
                    // client only).
                    halfway.fetch_add(1, Ordering::SeqCst);
                    wait_until(Duration::from_secs(2), || halfway.load(Ordering::SeqCst) == N);
                    c.write_all(&body[LEN / 2..]).unwrap();
                    read_response(&mut c, false).unwrap().status
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        statuses.iter().filter(|&&s| s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|&&s| s == 200).count(),
        N - 1,
        "{statuses:?}"
    );
    let stored = std::fs::read(env.dir().join("same.bin")).unwrap();
    assert!(bodies.contains(&stored), "the stored file is a mix");
    assert_eq!(env.entries(), ["same.bin"]);
}

fn curl_round_trip(model: &str) {
    let env = Env::start(model, &[]);
    let src = env.root.path().join("src.bin");
    // Past the size at which the server hashes on a thread of its own, and
    // not a whole number of its blocks.
    let body = data(20, 9_000_001);
    std::fs::write(&src, &body).unwrap();
    let out = tool("curl")
        .args([
            "-sf",
            "-T",
            src.to_str().unwrap(),
            &env.server.url("/files/rt.bin"),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sha256"], sha_hex(&body));
    let out = tool("curl")
        .args(["-sf", &env.server.url("/files/rt.bin")])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout == body, "downloaded bytes differ");
}

fn head_alone_over_max_upload_gets_413_and_nothing_is_written(model: &str) {
    let env = Env::start(model, &["--max-upload", "1K"]);
    assert_eq!(env.put("keep", b"old").status, 201);
    // A new name and an existing one: neither may be touched.
    for name in ["big", "keep"] {
        let mut s = env.server.connect();
        s.write_all(
            format!("PUT /files/{name} HTTP/1.1\r\nHost: t\r\nContent-Length: 1025\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
        // Not one byte of the body is sent: the answer has to come from
        // the head alone (read_response would time out otherwise).
        let r = read_response(&mut s, false).unwrap();
        assert_eq!(r.status, 413, "{name}");
        // Checked while the connection is still open: no temporary file
        // was created for a body that will never be read.
        assert_eq!(env.entries(), ["keep"], "{name}");
        assert!(
            is_closed(&mut s, Duration::from_secs(5)),
            "{name}: connection left open"
        );
    }
    // The default limit (1 GiB) works the same way for a huge length.
    let env2 = Env::start(model, &[]);
    let mut s = env2.server.connect();
    s.write_all(b"PUT /files/huge HTTP/1.1\r\nHost: t\r\nContent-Length: 1099511627776\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().status, 413);
    assert!(env2.entries().is_empty(), "{:?}", env2.entries());
    assert_eq!(std::fs::read(env.dir().join("keep")).unwrap(), b"old");
    assert_alive(&env.server);
}

/// A download of `name` whose response head and first bytes have arrived,
/// so the server has opened the file; the rest is read by `finish`.
struct OpenDownload {
    stream: std::net::TcpStream,
    first: Vec<u8>,
}

impl OpenDownload {
    fn start(env: &Env, name: &str) -> OpenDownload {
        let mut stream = env.server.connect();
        stream
            .write_all(
                format!("GET /files/{name} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            )
            .unwrap();
        let mut first = vec![0u8; 1];
        std::io::Read::read_exact(&mut stream, &mut first).unwrap();
        OpenDownload { stream, first }
    }

    fn finish(self) -> RawResponse {
        let mut r = std::io::Read::chain(&self.first[..], self.stream);
        read_response(&mut r, false).unwrap()
    }
}

fn readers_see_the_old_file_or_the_whole_new_one_during_a_replace(model: &str) {
    // Pools need a worker for the upload and one for each reader.
    let env = Env::start(model, &["--workers", "4"]);
    let old = data(30, 3 << 20);
    let new = data(31, 2 << 20);
    assert_eq!(env.put("r.bin", &old).status, 201);
    // A download that is under way before the replacement begins.
    let early = (model != "iterative").then(|| OpenDownload::start(&env, "r.bin"));
    let mut up = env.server.connect();
    up.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    up.write_all(
        format!(
            "PUT /files/r.bin HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            new.len()
        )
        .as_bytes(),
    )
    .unwrap();
    up.write_all(&new[..new.len() / 2]).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || env
            .entries()
            .iter()
            .any(|n| is_temp(n))),
        "the upload did not start: {:?}",
        env.entries()
    );
    // Mid-upload, the name is still the whole old file.
    assert!(std::fs::read(env.dir().join("r.bin")).unwrap() == old);
    let mid = std::thread::scope(|s| {
        let reader = s.spawn(|| env.get("/files/r.bin", ""));
        if model == "iterative" {
            // One connection at a time: this reader is served after the
            // upload, so it must see the whole new file (checked below).
            up.write_all(&new[new.len() / 2..]).unwrap();
        }
        reader.join().unwrap()
    });
    assert_eq!(mid.status, 200);
    if model == "iterative" {
        assert!(mid.body == new, "a reader saw a partial or mixed file");
    } else {
        assert!(
            mid.body == old,
            "a reader mid-upload did not get the whole old file"
        );
        // Another download begins mid-upload and ends after the rename.
        let late = OpenDownload::start(&env, "r.bin");
        up.write_all(&new[new.len() / 2..]).unwrap();
        let r = read_response(&mut up, false).unwrap();
        assert_eq!(r.status, 200, "replacing answers 200");
        assert_eq!(json(&r)["sha256"], sha_hex(&new));
        for (what, d) in [("early", early.unwrap()), ("late", late)] {
            let r = d.finish();
            assert_eq!(r.status, 200);
            assert!(r.body == old, "the {what} download changed under it");
        }
    }
    if model == "iterative" {
        assert_eq!(read_response(&mut up, false).unwrap().status, 200);
    }
    let after = env.get("/files/r.bin", "");
    assert!(
        after.body == new,
        "after the upload: not the whole new file"
    );
    assert_eq!(env.entries(), ["r.bin"]);
}

fn listing_hides_temporary_and_dot_files(model: &str) {
    let env = Env::start(model, &[]);
    assert_eq!(env.put("visible.txt", b"v").status, 201);
    for hidden in [".hidden", ".upload-abc123.tmp", ".upload-notes"] {
        std::fs::write(env.dir().join(hidden), b"h").unwrap();
    }
    std::fs::create_dir(env.dir().join("subdir")).unwrap();
    // And a real upload in progress, whose temporary file is hidden too.
    let mut s = env.server.connect();
    s.write_all(b"PUT /files/coming.bin HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
        .unwrap();
    s.write_all(&data(32, 50_000)).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || env
            .entries()
            .iter()
            .any(|n| is_temp(n) && n != ".upload-abc123.tmp")),
        "no temporary file appeared: {:?}",
        env.entries()
    );
    if model == "iterative" {
        // It serves one connection at a time: finish the upload first.
        s.write_all(&data(32, 50_000)).unwrap();
        assert_eq!(read_response(&mut s, false).unwrap().status, 201);
        assert_eq!(listing_names(&env, ""), ["coming.bin", "visible.txt"]);
    } else {
        assert_eq!(listing_names(&env, ""), ["visible.txt"]);
        assert_eq!(listing_names(&env, "?sort=size"), ["visible.txt"]);
    }
    // Hidden names cannot be fetched either.
    for name in [".hidden", ".upload-abc123.tmp"] {
        assert_eq!(env.get(&format!("/files/{name}"), "").status, 400, "{name}");
    }
}

/// Kills a server and its worker processes (prefork) with SIGKILL, as the
/// OOM killer or `kill -9` would, and waits until they are gone.
fn kill_9(server: &mut TestServer) {
    let children = child_pids(server.pid());
    assert!(send_signal(server.pid(), 9));
    for &c in &children {
        send_signal(c, 9);
    }
    server.child.wait().unwrap();
    // Reparented workers are reaped by init; until then they may still
    // hold their files open.
    assert!(wait_until(Duration::from_secs(10), || children
        .iter()
        .all(|&c| !alive(c))));
}

/// True while `pid` exists and is not a zombie.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .is_some_and(|zombie| !zombie)
}

fn restart_after_kill_9_mid_upload_removes_the_temporary_file(model: &str) {
    let root = tempfile::tempdir().unwrap();
    let files = root.path().join("files");
    let files_arg = files.to_str().unwrap();
    let mut server = TestServer::start(model, &["--files", files_arg]);
    assert_eq!(
        exchange(
            &server,
            b"PUT /files/keep.bin HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nConnection: close\r\n\r\nkeep"
        )
        .status,
        201
    );
    // Look-alikes that are not the server's temporary files stay.
    std::fs::write(files.join(".upload-notes"), b"mine").unwrap();
    std::fs::create_dir(files.join(".upload-dir001.tmp")).unwrap();
    let mut s = server.connect();
    s.write_all(b"PUT /files/cut.bin HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n")
        .unwrap();
    s.write_all(&data(33, 200_000)).unwrap();
    let temps = || -> Vec<String> {
        entries(&files)
            .into_iter()
            .filter(|n| is_temp(n) && n.ends_with(".tmp") && n != ".upload-dir001.tmp")
            .collect()
    };
    assert!(
        wait_until(Duration::from_secs(10), || temps().len() == 1),
        "{:?}",
        entries(&files)
    );
    kill_9(&mut server);
    drop(s);
    assert_eq!(temps().len(), 1, "the kill should leave the temporary file");
    let server = TestServer::start(model, &["--files", files_arg]);
    // The cleanup runs before the startup line is printed.
    assert_eq!(
        entries(&files),
        [".upload-dir001.tmp", ".upload-notes", "keep.bin"]
    );
    let r = exchange(
        &server,
        b"GET /files/keep.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.body, b"keep");
    assert_eq!(
        exchange(
            &server,
            b"GET /files/cut.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        )
        .status,
        404
    );
}

fn a_starting_server_leaves_a_live_upload_alone(model: &str) {
    let env = Env::start(model, &[]);
    let body = data(34, 300_000);
    let mut s = env.server.connect();
    s.write_all(
        format!(
            "PUT /files/live.bin HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    )
    .unwrap();
    s.write_all(&body[..100_000]).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || env
            .entries()
            .iter()
            .any(|n| is_temp(n))),
        "{:?}",
        env.entries()
    );
    // A second server on the same directory (a restart while the old one
    // drains, say) must not take the first one's upload for abandoned.
    let dir = env.dir();
    let second = TestServer::start("event-loop", &["--files", dir.to_str().unwrap()]);
    assert!(
        env.entries().iter().any(|n| is_temp(n)),
        "{:?}",
        env.entries()
    );
    s.write_all(&body[100_000..]).unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.status, 201);
    assert_eq!(json(&r)["sha256"], sha_hex(&body));
    assert!(std::fs::read(dir.join("live.bin")).unwrap() == body);
    assert_eq!(env.entries(), ["live.bin"]);
    drop(second);
}

/// Decision: dots inside a name are allowed. Only a whole `..` segment
/// climbs a directory, and a name is never split into segments, so `a..b`
/// is an ordinary file in the upload directory.
fn names_with_dots_inside_are_plain_files(model: &str) {
    let env = Env::start(model, &[]);
    // (request name, stored name, status): the encoded form names the
    // same file, so it replaces it.
    for (target, stored, status) in [
        ("a..b", "a..b", 201),
        ("x..", "x..", 201),
        ("v1...2.txt", "v1...2.txt", 201),
        ("a%2e%2eb", "a..b", 200),
    ] {
        let body = format!("body of {target}");
        assert_eq!(env.put(target, body.as_bytes()).status, status, "{target}");
        assert_eq!(
            env.get(&format!("/files/{target}"), "").body,
            body.as_bytes()
        );
        assert_eq!(
            std::fs::read(env.dir().join(stored)).unwrap(),
            body.as_bytes()
        );
    }
    // A whole `..` segment or a leading dot is still refused.
    for target in ["..", "..b", "%2e%2e", "a/../b"] {
        assert_eq!(env.put(target, b"no").status, 400, "{target}");
    }
    assert_eq!(env.entries(), ["a..b", "v1...2.txt", "x.."]);
    assert_eq!(entries(env.root.path()), ["files"]);
    assert_eq!(listing_names(&env, ""), ["a..b", "v1...2.txt", "x.."]);
    let r = env.request(b"DELETE /files/a..b HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(r.status, 204);
}

/// ENOSPC needs a small file system: a 1 MiB tmpfs, which the test mounts
/// (root with CAP_SYS_ADMIN, as CI runs); where it cannot, it fails naming
/// what it needs rather than passing unchecked. The io-error -> status
/// mapping itself is
/// covered without a mount by the unit tests in src/server/handlers/files.
fn full_disk_is_507_and_leaves_nothing(model: &str) {
    let root = tempfile::tempdir().unwrap();
    let mnt = root.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    // Failing, not skipping: a test that passes without checking anything
    // would hide a broken 507 on every machine that cannot mount.
    let _mount = TmpfsMount::new(&mnt, "1m").unwrap_or_else(|why| {
        panic!(
            "full_disk_is_507_and_leaves_nothing needs to mount a 1 MiB tmpfs: run the \
             tests as root (or with CAP_SYS_ADMIN) with `mount` from util-linux \
             installed ({why})"
        )
    });
    let server = TestServer::start(model, &["--files", mnt.to_str().unwrap()]);
    let body = data(21, 2 << 20);
    let mut req = format!(
        "PUT /files/full.bin HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    let mut s = server.connect();
    // Write from another thread: the server answers 507 and stops reading
    // before the body ends.
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(&req);
    });
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.status, 507);
    drop(s);
    let _ = writer.join();
    assert!(
        wait_until(Duration::from_secs(10), || entries(&mnt).is_empty()),
        "left behind: {:?}",
        entries(&mnt)
    );
    // The space is free again: a small upload works.
    assert_eq!(
        exchange(
            &server,
            b"PUT /files/s HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx"
        )
        .status,
        201
    );
    drop(server);
}

/// A tmpfs mounted for one test, unmounted on drop.
struct TmpfsMount(PathBuf);

impl TmpfsMount {
    /// Mounts, or says why it could not (mount's own message).
    fn new(at: &Path, size: &str) -> Result<TmpfsMount, String> {
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            // One line, whatever mount wrote.
            let err = String::from_utf8_lossy(&out.stderr);
            let err = err.split_whitespace().collect::<Vec<_>>().join(" ");
            return Err(format!("mount: {}, {err}", out.status));
        }
        Ok(TmpfsMount(at.to_path_buf()))
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// RFC 9110 13.1: If-Match, If-None-Match: * and If-Unmodified-Since hold
/// uploads and deletes back with 412 (the file is left as it was), and a
/// partial PUT (Content-Range) is 400, not a whole file made of the part.
fn regression_conditional_uploads_and_deletes_were_carried_out_regardless(model: &str) {
    let env = Env::start(model, &[]);
    let put = |name: &str, headers: &str, body: &str| {
        env.request(
            format!(
                "PUT /files/{name} HTTP/1.1\r\nHost: t\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
    };
    let content = |name: &str| std::fs::read(env.dir().join(name)).ok();
    assert_eq!(
        put("doc", "If-None-Match: *\r\n", "v1").status,
        201,
        "creates"
    );
    assert_eq!(
        put("doc", "If-None-Match: *\r\n", "v2").status,
        412,
        "never replaces"
    );
    assert_eq!(content("doc").as_deref(), Some(&b"v1"[..]));
    let etag = env
        .get("/files/doc", "")
        .header("etag")
        .unwrap()
        .to_string();

    assert_eq!(put("doc", "If-Match: \"bogus\"\r\n", "v3").status, 412);
    assert_eq!(
        put("doc", &format!("If-Match: W/{etag}\r\n"), "v3").status,
        412,
        "weak never matches"
    );
    assert_eq!(
        put("new", "If-Match: *\r\n", "x").status,
        412,
        "* needs a file"
    );
    assert_eq!(content("new"), None);
    let old = "If-Unmodified-Since: Mon, 01 Jan 2001 00:00:00 GMT\r\n";
    assert_eq!(put("doc", old, "v3").status, 412);
    assert_eq!(content("doc").as_deref(), Some(&b"v1"[..]));
    assert_eq!(
        put("doc", &format!("If-Match: \"x\", {etag}\r\n"), "v4").status,
        200
    );
    assert_eq!(content("doc").as_deref(), Some(&b"v4"[..]));
    assert_eq!(
        put("doc", &format!("If-Match: {etag}\r\n"), "v5").status,
        412,
        "stale tag"
    );

    let r = put("doc", "Content-Range: bytes 0-1/10\r\n", "XY");
    assert_eq!(r.status, 400);
    assert_eq!(content("doc").as_deref(), Some(&b"v4"[..]));

    let delete = |headers: &str| {
        env.request(
            format!("DELETE /files/doc HTTP/1.1\r\nHost: t\r\n{headers}Connection: close\r\n\r\n")
                .as_bytes(),
        )
    };
    assert_eq!(delete("If-Match: \"bogus\"\r\n").status, 412);
    assert_eq!(delete(old).status, 412);
    assert!(content("doc").is_some());
    let etag = env
        .get("/files/doc", "")
        .header("etag")
        .unwrap()
        .to_string();
    assert_eq!(delete(&format!("If-Match: {etag}\r\n")).status, 204);
    assert_eq!(content("doc"), None);
    assert_eq!(
        env.entries(),
        Vec::<String>::new(),
        "no temporary file left"
    );
    // Static files answer the same preconditions (the embedded docroot).
    let r = env.get("/500B.html", old);
    assert_eq!(r.status, 412);
    assert_eq!(env.get("/500B.html", "If-Match: \"nope\"\r\n").status, 412);
    assert_eq!(env.get("/500B.html", "If-Match: *\r\n").status, 200);
}

// ------------------------------------------------------- instantiation

per_model!(
    listing_is_sorted_json_with_times,
    put_creates_then_replaces,
    chunked_upload_is_stored_whole,
    get_and_head_carry_validators_and_304,
    single_ranges_206_and_416,
    sha256_query_returns_the_digest,
    delete_204_then_404,
    bad_names_are_400_and_touch_nothing,
    symlinks_are_not_followed,
    over_max_upload_is_413_before_writing,
    body_cut_off_leaves_no_file,
    killed_client_leaves_no_file,
    concurrent_same_name_uploads_give_one_whole_file,
    curl_round_trip,
    full_disk_is_507_and_leaves_nothing,
    regression_conditional_uploads_and_deletes_were_carried_out_regardless,
    head_alone_over_max_upload_gets_413_and_nothing_is_written,
    readers_see_the_old_file_or_the_whole_new_one_during_a_replace,
    listing_hides_temporary_and_dot_files,
    restart_after_kill_9_mid_upload_removes_the_temporary_file,
    a_starting_server_leaves_a_live_upload_alone,
    names_with_dots_inside_are_plain_files,
);

// ------------------------------------------------------ model-independent

#[test]
fn a_prefork_worker_killed_mid_upload_leaves_no_temporary_file() {
    let env = Env::start("prefork", &["--workers", "2"]);
    let temps = || -> Vec<String> { env.entries().into_iter().filter(|n| is_temp(n)).collect() };
    // Two uploads in progress, one on each worker.
    let begin = |name: &str| {
        let mut s = env.server.connect();
        s.write_all(
            format!("PUT /files/{name} HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
        s.write_all(&data(7, 200_000)).unwrap();
        s
    };
    let _cut = begin("cut.bin");
    assert!(wait_until(Duration::from_secs(10), || temps().len() == 1));
    let cut_temp = temps()[0].clone();
    let mut live = begin("live.bin");
    assert!(wait_until(Duration::from_secs(10), || temps().len() == 2));
    let holder = child_pids(env.server.pid())
        .into_iter()
        .find(|&pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .into_iter()
                .flatten()
                .flatten()
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t.ends_with(&cut_temp)))
        })
        .expect("a worker holds the first upload's temporary file");
    assert!(send_signal(holder, 9));
    // The parent notices within a tick and removes the dead worker's file,
    // and only that one.
    assert!(
        wait_until(Duration::from_secs(10), || temps().len() == 1
            && !temps().contains(&cut_temp)),
        "{:?}",
        env.entries()
    );
    live.write_all(&data(7, 1_000_000)[200_000..]).unwrap();
    let r = read_response(&mut live, false).unwrap();
    assert_eq!(r.status, 201);
    assert_eq!(env.entries(), ["live.bin"]);
    assert_alive(&env.server);
}

#[test]
fn startup_line_names_the_files_dir() {
    let env = Env::start("event-loop", &[]);
    let dir = std::fs::canonicalize(env.dir()).unwrap();
    assert!(
        env.server
            .line
            .ends_with(&format!(" files={}", dir.display())),
        "{}",
        env.server.line
    );
}

#[test]
fn default_files_dir_is_under_the_data_dir() {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(loadlab_bin())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("XDG_DATA_HOME", data.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let want = std::fs::canonicalize(data.path().join("loadlab/files")).unwrap();
    assert!(
        line.trim_end()
            .ends_with(&format!(" files={}", want.display())),
        "{line}"
    );
}

#[test]
fn bad_max_upload_is_a_usage_error() {
    let out = Command::new(loadlab_bin())
        .args(["serve", "--addr", "127.0.0.1:0", "--max-upload", "lots"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let file = tempfile::NamedTempFile::new().unwrap();
    let out = Command::new(loadlab_bin())
        .args(["serve", "--addr", "127.0.0.1:0", "--files"])
        .arg(file.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
}
