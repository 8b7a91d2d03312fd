//! Which names the service accepts: bad names are 400 and touch nothing,
//! symlinks are not followed, dots inside a name are plain, and temporary and
//! dot files stay out of the listing.

use std::io::Write;
use std::time::Duration;

use crate::common::*;

use super::support::{data, entries, is_temp, listing_names, Env};

pub fn bad_names_are_400_and_touch_nothing(model: &str) {
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

pub fn symlinks_are_not_followed(model: &str) {
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

pub fn listing_hides_temporary_and_dot_files(model: &str) {
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

/// Decision: dots inside a name are allowed. Only a whole `..` segment
/// climbs a directory, and a name is never split into segments, so `a..b`
/// is an ordinary file in the upload directory.
pub fn names_with_dots_inside_are_plain_files(model: &str) {
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
