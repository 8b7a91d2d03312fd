//! Counting a running server's syscalls with `strace -c -f` over a real
//! keep-alive load (loadlab bench), for the tests that pin which syscalls
//! a model makes and how many per request.

use std::process::{Command, Stdio};
use std::time::Duration;

use super::{loadlab_bin, TestServer};

/// Time for strace to attach to every thread before the load starts.
const ATTACH: Duration = Duration::from_millis(500);

/// What `keep_alive_counts` measured: requests completed and the calls of
/// each syscall the server made meanwhile.
pub struct Counted {
    pub requests: u64,
    pub counts: Vec<(String, u64)>,
    /// strace's summary, for failure messages.
    pub summary: String,
}

impl Counted {
    /// Calls of `name` (0 if it was never made).
    pub fn calls(&self, name: &str) -> u64 {
        self.counts
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |c| c.1)
    }

    /// Every syscall made, per request.
    pub fn total_per_request(&self) -> f64 {
        self.counts.iter().map(|c| c.1).sum::<u64>() as f64 / self.requests as f64
    }
}

/// Runs `loadlab bench -k -n N -c C` on `path` while strace counts the
/// server's syscalls (all threads); asserts the load had no failures.
pub fn keep_alive_counts(server: &TestServer, path: &str, n: u64, c: u64) -> Counted {
    if Command::new("strace").arg("-V").output().is_err() {
        panic!("strace is not installed (.ci/run installs it)");
    }
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut strace = Command::new("strace")
        .args(["-f", "-c", "-o", out.path().to_str().unwrap(), "-p"])
        .arg(server.pid().to_string())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(ATTACH);
    let bench = Command::new(loadlab_bin())
        .args(["bench", "-k", "-n", &n.to_string(), "-c", &c.to_string()])
        .args(["--format", "json"])
        .arg(server.url(path))
        .output()
        .unwrap();
    assert!(
        bench.status.success(),
        "{}",
        String::from_utf8_lossy(&bench.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&bench.stdout).unwrap();
    assert_eq!(r["failed"], 0, "{r}");
    assert!(super::send_signal(strace.id() as i32, libc::SIGINT));
    // strace detaches, writes its summary and re-raises the signal.
    strace.wait().unwrap();
    let summary = std::fs::read_to_string(out.path()).unwrap();
    Counted {
        requests: r["complete"].as_u64().expect("complete in bench JSON"),
        counts: counts(&summary),
        summary,
    }
}

/// The counts of an `strace -c` summary, by syscall name.
pub fn counts(summary: &str) -> Vec<(String, u64)> {
    summary
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // % time, seconds, usecs/call, calls, [errors,] syscall
            let name = f.last()?.to_string();
            let calls = f.get(3)?.parse().ok()?;
            (f.len() >= 5 && name != "total").then_some((name, calls))
        })
        .collect()
}
