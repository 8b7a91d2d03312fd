//! A server killed mid-upload (kill -9, a prefork worker) leaves no temporary
//! file behind once restarted, and a starting server leaves a live upload alone.

use std::io::Write;
use std::time::Duration;

use crate::common::*;

use super::support::{data, entries, is_temp, json, sha_hex, Env};

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

pub fn restart_after_kill_9_mid_upload_removes_the_temporary_file(model: &str) {
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

pub fn a_starting_server_leaves_a_live_upload_alone(model: &str) {
    let env = Env::start(model, &[]);
    let body = data(34, 300_000);
    let mut s = env.server.connect();
    s.write_all(
        format!(
            "PUT /files/live.bin HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nWant-Repr-Digest: sha-256=1\r\nConnection: close\r\n\r\n",
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
