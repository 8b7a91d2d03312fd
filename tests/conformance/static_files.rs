//! Static files under --root: served from memory or with sendfile,
//! conditional GET, names too long for the filesystem, and no path or
//! symlink that leads outside the root.

use std::io::Write;

use crate::common::*;

use super::support::{expect_error, get, one, show};

/// A docroot inside a temp dir, with a secret next to it and symlinks from
/// inside the root to outside it.
struct TraversalRoot {
    _dir: tempfile::TempDir,
    root: String,
}

const SECRET: &str = "TOP-SECRET-must-never-be-served";

fn traversal_root() -> TraversalRoot {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("public");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("index.html"), "<p>index</p>").unwrap();
    std::fs::write(root.join("a.txt"), "plain file").unwrap();
    // What `assert_alive` asks for.
    std::fs::write(root.join("500B.html"), [b'x'; 500]).unwrap();
    std::fs::write(root.join("sub/b.txt"), "nested file").unwrap();
    std::fs::write(dir.path().join("secret.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
    std::os::unix::fs::symlink("../secret.txt", root.join("rel.txt")).unwrap();
    // A symlink that stays inside the root is fine.
    std::os::unix::fs::symlink("a.txt", root.join("inside.txt")).unwrap();
    TraversalRoot {
        root: root.to_string_lossy().into_owned(),
        _dir: dir,
    }
}

/// Files under --root: small ones from memory, large ones with sendfile,
/// HEAD without a body, conditional GET, all on one keep-alive connection.
pub fn static_files_from_a_root(model: &str) {
    let tr = traversal_root();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(std::path::Path::new(&tr.root).join("big.bin"), &big).unwrap();
    let server = TestServer::start(model, &["--root", &tr.root]);
    let mut s = server.connect();
    s.write_all(b"HEAD /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, true).unwrap();
    assert_eq!(
        (r.status, r.header("content-length")),
        (200, Some("300000"))
    );
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));
    // A large file and a small one pipelined behind it.
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.status, 200);
    assert!(r.body == big, "big.bin differs");
    let etag = r.header("etag").expect("ETag").to_string();
    assert!(r.header("last-modified").is_some());
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!((r.status, r.body), (200, b"plain file".to_vec()));
    // If-None-Match with the current ETag: 304, no body.
    s.write_all(
        format!("GET /big.bin HTTP/1.1\r\nHost: t\r\nIf-None-Match: {etag}\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!(r.status, 304);
    // The same condition on a POST is a failed precondition, not a 304.
    s.write_all(
        format!(
            "POST /big.bin HTTP/1.1\r\nHost: t\r\nIf-None-Match: {etag}\r\nContent-Length: 0\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().status, 412);
    // Regression (preconditions_found_in_any_case_and_position): the
    // conditions are looked up only when the parse saw an `If-` field
    // name, so that test must ignore case and not stop at the first field.
    s.write_all(
        format!("GET /big.bin HTTP/1.1\r\nHost: t\r\nAccept: */*\r\niF-nOnE-mAtCh: {etag}\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().status, 304);
    s.write_all(&get("/sub/b.txt")).unwrap();
    let r = read_response(&mut s, false).unwrap();
    assert_eq!((r.status, r.body), (200, b"nested file".to_vec()));
    s.write_all(&get("/missing.txt")).unwrap();
    assert_eq!(read_response(&mut s, false).unwrap().status, 404);
}

/// Regression: a path segment longer than the filesystem allows (NAME_MAX,
/// 255 bytes) made the lookup fail with ENAMETOOLONG, answered 500.
pub fn regression_name_too_long_was_a_500(model: &str) {
    let tr = traversal_root();
    let server = TestServer::start(model, &["--root", &tr.root]);
    let mut s = server.connect();
    for name in ["a".repeat(300), format!("sub/{}", "b".repeat(5000))] {
        s.write_all(&get(&format!("/{name}"))).unwrap();
        let r = read_response(&mut s, false).unwrap();
        assert_eq!(r.status, 404, "a name of {} bytes", name.len());
    }
}

pub fn path_traversal_never_leaks(model: &str) {
    let tr = traversal_root();
    let server = TestServer::start(model, &["--root", &tr.root]);
    for (path, body) in [
        ("/a.txt", "plain file"),
        ("/sub/b.txt", "nested file"),
        ("/sub/../a.txt", ""),
        ("/inside.txt", "plain file"),
        ("/%61.txt", "plain file"),
        ("/", "<p>index</p>"),
    ] {
        let r = one(&server, &get(path));
        if body.is_empty() {
            // `..` is refused even when it would stay inside the root.
            assert!(matches!(r.status, 400 | 403 | 404), "{path}: {}", r.status);
        } else {
            assert_eq!((r.status, show(&r.body)), (200, body.to_string()), "{path}");
        }
    }
    let targets = [
        "/../secret.txt",
        "/../../secret.txt",
        "/sub/../../secret.txt",
        "/./../secret.txt",
        "//../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E/secret.txt",
        "/.%2e/secret.txt",
        "/%2e./secret.txt",
        "/..%2fsecret.txt",
        "/..%2Fsecret.txt",
        "/%2e%2e%2fsecret.txt",
        "/sub/..%2f..%2fsecret.txt",
        "/%252e%252e/secret.txt",
        "/%252e%252e%252fsecret.txt",
        "/%c0%ae%c0%ae/secret.txt",
        "/%c0%ae%c0%ae%c0%afsecret.txt",
        "/%e0%80%ae%e0%80%ae/secret.txt",
        "/..\\secret.txt",
        "/sub\\..\\..\\secret.txt",
        "/%5c..%5csecret.txt",
        "/..%5csecret.txt",
        "/secret.txt%00",
        "/..%00/secret.txt",
        "/a.txt%00/../../secret.txt",
        "/link.txt",
        "/rel.txt",
        "/up/secret.txt",
        "/up/public/../secret.txt",
        "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    ];
    for t in targets {
        for raw in [
            format!("GET {t} HTTP/1.1\r\nHost: t\r\n\r\n"),
            format!("GET http://t{t} HTTP/1.1\r\nHost: t\r\n\r\n"),
            format!("HEAD {t} HTTP/1.1\r\nHost: t\r\n\r\n"),
        ] {
            let mut s = server.connect();
            s.write_all(raw.as_bytes()).unwrap();
            let r = read_response(&mut s, raw.starts_with("HEAD"))
                .unwrap_or_else(|e| panic!("{raw:?}: {e}"));
            assert!(
                matches!(r.status, 400 | 403 | 404),
                "{raw:?} answered {}",
                r.status
            );
            assert!(
                !String::from_utf8_lossy(&r.body).contains(SECRET),
                "{raw:?} leaked the secret"
            );
        }
        // After each refused form the server still serves a good request.
        let ok = one(&server, &get("/a.txt"));
        assert_eq!(
            (ok.status, show(&ok.body)),
            (200, "plain file".into()),
            "after {t}"
        );
    }
    // A raw NUL in the target is refused by the parser.
    expect_error(
        &server,
        b"GET /secret.txt\0 HTTP/1.1\r\nHost: t\r\n\r\n",
        400,
    );
    // Raw `..` sent through a socket, not normalized by any client.
    let r = one(&server, b"GET /.. HTTP/1.1\r\nHost: t\r\n\r\n");
    assert!(matches!(r.status, 400 | 403 | 404));
    assert_alive(&server);
}
