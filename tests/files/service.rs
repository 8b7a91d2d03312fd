//! The file service as HTTP: listing, GET/HEAD with validators and 304,
//! ranges, the SHA-256 query, DELETE, conditional PUT/DELETE, and curl.

use std::time::Duration;

use crate::common::*;

use super::support::{data, json, listing_names, sha_hex, Env};

pub fn listing_is_sorted_json_with_times(model: &str) {
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

pub fn get_and_head_carry_validators_and_304(model: &str) {
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

pub fn single_ranges_206_and_416(model: &str) {
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

pub fn sha256_query_returns_the_digest(model: &str) {
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

pub fn delete_204_then_404(model: &str) {
    let env = Env::start(model, &[]);
    env.put("x", b"1");
    let del = b"DELETE /files/x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let r = env.request(del);
    assert_eq!(r.status, 204);
    assert!(env.entries().is_empty());
    assert_eq!(env.request(del).status, 404);
    assert_eq!(env.get("/files/x", "").status, 404);
}

pub fn curl_round_trip(model: &str) {
    let env = Env::start(model, &[]);
    let src = env.root.path().join("src.bin");
    // Past the size at which the server hashes on a thread of its own, and
    // not a whole number of its blocks.
    let body = data(20, 9_000_001);
    std::fs::write(&src, &body).unwrap();
    let out = tool("curl")
        .args([
            "-sf",
            "-H",
            "Want-Repr-Digest: sha-256=1",
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

/// RFC 9110 13.1: If-Match, If-None-Match: * and If-Unmodified-Since hold
/// uploads and deletes back with 412 (the file is left as it was), and a
/// partial PUT (Content-Range) is 400, not a whole file made of the part.
pub fn regression_conditional_uploads_and_deletes_were_carried_out_regardless(model: &str) {
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
