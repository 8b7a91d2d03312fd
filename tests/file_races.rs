//! Conditional changes of one name racing each other, on every model
//! (issue 19 item 1), and the file service's housekeeping around them
//! (item 7). Raw sockets: each racer sends its head and all but the end of
//! its body, so both have passed the early precondition check before
//! either finishes; then both finish at once.

use crate::common;

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

/// How long a racer waits for the other to be read by the server. A model
/// that serves one connection at a time (iterative) never reads the
/// second while the first is open, so this is a bound, not a sleep.
const BOTH_READ: Duration = Duration::from_secs(2);

struct Env {
    server: TestServer,
    dir: tempfile::TempDir,
}

impl Env {
    fn start(model: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let server = TestServer::start(model, &["--files", dir.path().to_str().unwrap()]);
        Env { server, dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn temps(&self) -> usize {
        self.entries()
            .iter()
            .filter(|n| n.starts_with(loadlab::results::files::TEMP_PREFIX))
            .count()
    }

    /// Sends a PUT's head and all of `body` but its last byte.
    fn begin_put(&self, name: &str, headers: &str, body: &[u8]) -> TcpStream {
        let mut s = self.server.connect();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            s,
            "PUT /files/{name} HTTP/1.1\r\nHost: t\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .unwrap();
        s.write_all(&body[..body.len() - 1]).unwrap();
        s
    }

    /// The ETag of `name`'s current version.
    fn etag(&self, name: &str) -> String {
        let r = exchange(
            &self.server,
            format!("HEAD /files/{name} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(r.status, 200);
        r.header("etag").unwrap().to_string()
    }

    /// Waits (bounded) until the server has `n` uploads in progress; on a
    /// one-connection-at-a-time model it never has more than one.
    fn wait_uploads(&self, n: usize) {
        wait_until(BOTH_READ, || self.temps() >= n);
    }
}

/// Sends the last byte of a begun PUT and reads its answer.
fn finish(mut s: TcpStream, body: &[u8]) -> u16 {
    s.write_all(&body[body.len() - 1..]).unwrap();
    read_response(&mut s, false).unwrap().status
}

/// Both racers finish at once; returns their statuses in order.
fn finish_both(a: (TcpStream, &[u8]), b: (TcpStream, &[u8])) -> [u16; 2] {
    std::thread::scope(|sc| {
        let ha = sc.spawn(|| finish(a.0, a.1));
        let hb = sc.spawn(|| finish(b.0, b.1));
        [ha.join().unwrap(), hb.join().unwrap()]
    })
}

/// A racer's body: small enough that the part sent before the race fits
/// in a socket's receive buffer while a one-at-a-time model has not yet
/// accepted its connection.
fn body(seed: u8) -> Vec<u8> {
    (0..50_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8 ^ seed)
        .collect()
}

/// Exactly one of two statuses is `win`, the other 412; the stored file
/// is the winner's body (or absent when `None`), and no temporary file is
/// left.
fn one_winner(env: &Env, name: &str, got: [u16; 2], win: [u16; 2], bodies: [Option<&[u8]>; 2]) {
    let winner = match got {
        [w, 412] if w == win[0] => 0,
        [412, w] if w == win[1] => 1,
        _ => panic!("want one {win:?} and one 412, got {got:?}"),
    };
    assert_eq!(
        std::fs::read(env.path(name)).ok().as_deref(),
        bodies[winner]
    );
    assert!(
        wait_until(Duration::from_secs(10), || env.temps() == 0),
        "the loser's temporary file is left: {:?}",
        env.entries()
    );
}

/// Two overlapping `If-None-Match: *` PUTs of one name both succeeded
/// (201, then 200 overwriting the first), two with the same `If-Match`
/// both got 200, and a PUT with `If-Match` recreated the file a DELETE
/// with the same tag had just removed: the precondition was checked before
/// the body was read and the commit replaced whatever was there.
fn regression_overlapping_conditional_writes_both_succeeded(model: &str) {
    let env = Env::start(model);
    let (b1, b2, b3) = (body(1), body(2), body(3));

    // Create-only: one creates, the other finds the name taken.
    let a = env.begin_put("new.bin", "If-None-Match: *\r\n", &b1);
    env.wait_uploads(1);
    let b = env.begin_put("new.bin", "If-None-Match: *\r\n", &b2);
    env.wait_uploads(2);
    let got = finish_both((a, &b1), (b, &b2));
    one_winner(&env, "new.bin", got, [201, 201], [Some(&b1), Some(&b2)]);

    // Compare-and-swap: both read version v0; one replaces it.
    assert_eq!(
        exchange(
            &env.server,
            b"PUT /files/cas.bin HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nConnection: close\r\n\r\nv0"
        )
        .status,
        201
    );
    let tag = format!("If-Match: {}\r\n", env.etag("cas.bin"));
    let a = env.begin_put("cas.bin", &tag, &b1);
    env.wait_uploads(1);
    let b = env.begin_put("cas.bin", &tag, &b2);
    env.wait_uploads(2);
    let got = finish_both((a, &b1), (b, &b2));
    one_winner(&env, "cas.bin", got, [200, 200], [Some(&b1), Some(&b2)]);

    // A delete of the version an upload is about to replace: one of them.
    let tag = format!("If-Match: {}\r\n", env.etag("cas.bin"));
    let put = env.begin_put("cas.bin", &tag, &b3);
    env.wait_uploads(1);
    let got = std::thread::scope(|sc| {
        let del = sc.spawn(|| {
            exchange(
                &env.server,
                format!(
                    "DELETE /files/cas.bin HTTP/1.1\r\nHost: t\r\n{tag}Connection: close\r\n\r\n"
                )
                .as_bytes(),
            )
            .status
        });
        // Concurrent models answer the DELETE now; a one-at-a-time model
        // only once the PUT is done.
        wait_until(BOTH_READ, || del.is_finished());
        let put = finish(put, &b3);
        [put, del.join().unwrap()]
    });
    one_winner(&env, "cas.bin", got, [200, 204], [Some(&b3), None]);
}

per_model!(regression_overlapping_conditional_writes_both_succeeded);

/// `serve --files DIR --root MISSING` created DIR before it refused the
/// root: every check comes before anything is created.
#[test]
fn regression_a_refused_root_still_created_the_files_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let files = tmp.path().join("new-files");
    let out = Command::new(loadlab_bin())
        .args(["serve", "--addr", "127.0.0.1:0", "--root"])
        .arg(tmp.path().join("no-such-root"))
        .arg("--files")
        .arg(&files)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no-such-root"), "{err}");
    assert!(
        !exists(&files),
        "--files was created before --root was refused"
    );
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}
