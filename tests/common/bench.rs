//! Running `loadlab bench` from a test: its JSON result, or its text
//! output and exit code.

use std::process::Command;

use serde_json::Value;

use super::loadlab_bin;

/// Runs `loadlab bench ARGS... --format json -q` and parses the result.
/// The exit status is held to the result: 1 with one line on stderr when
/// not one request got a 2xx or 3xx answer, 0 otherwise.
pub fn bench_json(args: &[&str]) -> Value {
    let out = Command::new(loadlab_bin())
        .arg("bench")
        .args(args)
        .args(["--format", "json", "-q"])
        .output()
        .expect("run loadlab bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bench JSON: {e}; stderr: {stderr}"));
    let ok = u(&v, "/status_classes/2xx") + u(&v, "/status_classes/3xx");
    if ok > 0 {
        assert!(out.status.success(), "bench failed: {stderr}");
    } else {
        assert_eq!(out.status.code(), Some(1), "nothing usable, yet: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("measured nothing usable"), "{stderr}");
    }
    v
}

/// Runs `loadlab bench ARGS...`: (stdout, stderr, exit code).
pub fn bench_text(args: &[&str]) -> (String, String, i32) {
    let out = Command::new(loadlab_bin())
        .arg("bench")
        .args(args)
        .output()
        .expect("run");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// The unsigned integer at a JSON pointer; panics naming it if absent.
pub fn u(v: &Value, path: &str) -> u64 {
    v.pointer(path)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{path} missing in {v}"))
}

/// The bytes bench sends for one kept-alive `-p`/`-u` request of `body`
/// with `-T application/x-test` to `url`: what ab's "Total body sent"
/// adds up, and what a server receives.
pub fn body_request(method: &str, body: &[u8], url: &str) -> usize {
    loadlab::bench::RequestSpec {
        method: method.into(),
        body: Some(body.to_vec().into()),
        content_type: Some("application/x-test".into()),
        keep_alive: true,
        ..Default::default()
    }
    .encode(&loadlab::net::url::HttpUrl::parse(url).unwrap())
    .len()
}

/// Runs `loadlab bench -q ARGS... --format json --out DIR/NAME URL` for
/// each (NAME, ARGS) and returns the files written.
pub fn bench_files(
    dir: &std::path::Path,
    url: &str,
    runs: &[(&str, &[&str])],
) -> Vec<std::path::PathBuf> {
    runs.iter()
        .map(|(name, args)| {
            let path = dir.join(name);
            let out = path.to_str().unwrap();
            let all = [&["-q", "--format", "json", "--out", out][..], args, &[url]].concat();
            let (_, err, code) = bench_text(&all);
            assert_eq!(code, 0, "{err}");
            path
        })
        .collect()
}

/// `loadlab merge --format json FILES...`, which must succeed: the merged
/// JSON, and each input's.
pub fn merge_files(files: &[std::path::PathBuf], flags: &[&str]) -> (Value, Vec<Value>) {
    let out = Command::new(loadlab_bin())
        .args(["merge", "--format", "json"])
        .args(flags)
        .args(files)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let read = |f: &std::path::PathBuf| serde_json::from_str(&std::fs::read_to_string(f).unwrap());
    let runs = files.iter().map(|f| read(f).unwrap()).collect();
    (serde_json::from_slice(&out.stdout).unwrap(), runs)
}
