//! Helpers the compare tests share: a small sweep, a bench JSON, a
//! Python server whose delay per request is set by a file, and running
//! `loadlab compare`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::loadlab_bin;
use serde_json::Value;

/// Runs `loadlab sweep ARGS --out DIR -q --no-check`, which must succeed.
pub fn sweep(args: &[&str], out: &Path) {
    let o = Command::new(loadlab_bin())
        .arg("sweep")
        .args(args)
        .arg("--out")
        .arg(out)
        .args(["-q", "--no-check"])
        .output()
        .expect("run loadlab sweep");
    assert!(
        o.status.success(),
        "sweep {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `loadlab compare ARGS`: stdout, stderr, exit status.
pub fn compare(args: &[&str]) -> (String, String, i32) {
    let o = Command::new(loadlab_bin())
        .arg("compare")
        .args(args)
        .output()
        .expect("run loadlab compare");
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

/// `loadlab compare ARGS --format json`, which must succeed.
pub fn compare_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let (out, err, code) = compare(&all);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).expect("compare --format json is JSON")
}

/// Every metric row of a JSON comparison: (cell index, metric, verdict,
/// ratio estimate).
pub fn verdicts(doc: &Value) -> Vec<(usize, String, String, Option<f64>)> {
    let mut out = Vec::new();
    for (i, c) in doc["cells"].as_array().expect("cells").iter().enumerate() {
        for m in c["metrics"].as_array().expect("metrics") {
            out.push((
                i,
                m["metric"].as_str().unwrap_or_default().to_string(),
                m["verdict"].as_str().unwrap_or_default().to_string(),
                m["ratio"]["estimate"].as_f64(),
            ));
        }
    }
    out
}

/// A Python server (a thread per connection) that sleeps the seconds in
/// `dir/delay` before each answer: the same command in two sweeps, made
/// slower between them by rewriting the file.
pub fn slow_python(dir: &Path, delay_s: f64) -> String {
    let script = dir.join("slow.py");
    std::fs::write(
        &script,
        r#"import sys, time, os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
DELAY = float(open(os.path.join(os.path.dirname(__file__), "delay")).read())
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(DELAY)
        body = b"slow\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#,
    )
    .unwrap();
    set_delay(dir, delay_s);
    format!("cmd:python3 {} {{port}}", script.display())
}

pub fn set_delay(dir: &Path, delay_s: f64) {
    std::fs::write(dir.join("delay"), delay_s.to_string()).unwrap();
}

/// `loadlab bench ARGS --format json URL` into `file`.
pub fn bench_json(args: &[&str], url: &str, file: &Path) -> PathBuf {
    let o = Command::new(loadlab_bin())
        .arg("bench")
        .args(args)
        .args(["--format", "json", "--out"])
        .arg(file)
        .arg(url)
        .output()
        .expect("run loadlab bench");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    file.to_path_buf()
}

/// The stderr of a refused command: exactly one line, no panic.
pub fn one_line(stderr: &str) -> &str {
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr.trim_end()
}
