//! Samples a process tree from /proc while a run goes on: CPU % (user+sys,
//! over 100 with several cores) and peak resident memory. Also the load
//! generator's own CPU from getrusage.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Sampling period: the issue asks for at least 10 samples a second.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// What a monitor saw over one run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Mean CPU % of the tree (100 = one core fully busy).
    pub cpu_pct: f64,
    /// Largest sum of resident memory over the tree seen in one sample.
    pub peak_rss_kb: u64,
    pub samples: u64,
}

/// The pid and all its descendants, found through
/// /proc/PID/task/TID/children.
pub fn tree(root: u32) -> Vec<u32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let pid = out[i];
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for t in tasks.flatten() {
                let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
                out.extend(
                    kids.split_whitespace()
                        .filter_map(|k| k.parse::<u32>().ok()),
                );
            }
        }
        i += 1;
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// utime+stime of a process in clock ticks, plus (for the root) what its
/// reaped children used, so workers that exit mid-run still count.
fn cpu_ticks(pid: u32, include_reaped: bool) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // rest starts at field 3 (state): utime=14, stime=15, cutime=16, cstime=17.
    let mut t = n(11) + n(12);
    if include_reaped {
        t += n(13) + n(14);
    }
    Some(t)
}

fn rss_kb(pid: u32) -> u64 {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    pages * page / 1024
}

fn tree_ticks(root: u32) -> u64 {
    tree(root)
        .iter()
        .filter_map(|&p| cpu_ticks(p, p == root))
        .sum()
}

/// A sampling thread for one process tree; `finish` stops it.
pub struct Monitor {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Usage>>,
}

impl Monitor {
    pub fn start(root: u32) -> Monitor {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let start = Instant::now();
            let t0 = tree_ticks(root);
            let mut usage = Usage::default();
            loop {
                let rss: u64 = tree(root).iter().map(|&p| rss_kb(p)).sum();
                usage.peak_rss_kb = usage.peak_rss_kb.max(rss);
                usage.samples += 1;
                if flag.load(Ordering::Acquire) {
                    break;
                }
                std::thread::sleep(SAMPLE_EVERY);
            }
            let secs = start.elapsed().as_secs_f64().max(1e-6);
            let used = tree_ticks(root).saturating_sub(t0) as f64 / ticks_per_second();
            usage.cpu_pct = used / secs * 100.0;
            usage
        });
        Monitor {
            stop,
            handle: Some(handle),
        }
    }

    pub fn finish(mut self) -> Usage {
        self.stop.store(true, Ordering::Release);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

/// This process's CPU time so far (user+sys, all threads), for the
/// client's own CPU %.
pub fn self_cpu() -> Duration {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map(|u| {
            let tv = |t: nix::sys::time::TimeVal| {
                Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000)
            };
            tv(u.user_time()) + tv(u.system_time())
        })
        .unwrap_or_default()
}
