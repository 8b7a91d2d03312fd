//! Watches a process tree while a run goes on: its CPU time (user+sys,
//! from nanosecond CPU clocks), its context switches, and its peak
//! resident memory (sampled from /proc). Also the load generator's own CPU
//! from getrusage.
//!
//! Context switches come from each thread's /proc/PID/task/TID (the
//! voluntary + nonvoluntary switches of its status, read from schedstat). No file under /proc adds up a process's
//! exited threads for these (the process's own status line is its main
//! thread's; /proc/PID/stat has no such field; taskstats' per-process sum
//! leaves dead threads' switches out; a perf counter would need
//! privileges), so threads are read at the start, at every sample and at
//! the end, and a thread that exits mid-run keeps the count it last
//! showed. Threads living shorter than one sample (thread-per-conn without
//! keep-alive) are missed: the figure is a lower bound for such servers.

use std::collections::HashMap;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::host::{stat_fields, ticks_per_second};

/// Sampling period: the issue asks for at least 10 samples a second.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// What a monitor saw over one run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Mean CPU % of the tree (100 = one core fully busy).
    pub cpu_pct: f64,
    /// CPU time of the tree over the run (every process and thread, the
    /// exited ones included), in ms.
    pub cpu_ms: f64,
    /// Voluntary + involuntary context switches of the tree's threads
    /// over the run (see the module notes for threads it cannot see).
    pub ctx_switches: u64,
    /// Of those, the ones the scheduler forced (status's
    /// nonvoluntary_ctxt_switches, read at the start, the end and every
    /// `STATUS_EVERY` samples): a lower bound where threads exited.
    pub ctx_involuntary: u64,
    /// Largest sum of resident memory over the tree seen in one sample.
    pub peak_rss_kb: u64,
    pub samples: u64,
    /// Time the tree's threads waited, ready, for a CPU, in ms: a lower
    /// bound where threads exited mid-run (their last sample counts).
    pub runq_wait_ms: f64,
    /// The tree's CPU time split into user and system time (ms, from
    /// /proc clock ticks: 10 ms steps).
    pub cpu_user_ms: f64,
    pub cpu_system_ms: f64,
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

/// CPU time of one process in nanoseconds, all its threads together,
/// including threads that have already exited.
///
/// The process's CPU clock is read, not the sum of
/// /proc/PID/task/*/schedstat: that sum is as precise but forgets every
/// thread that ended, and thread-per-conn ends one thread per connection
/// (measured: schedstat showed 0.34 s of the 1.5 s such a server used).
/// /proc/PID/stat has exited threads too, but only in 10 ms clock ticks,
/// which reads 0 % for a run of a few milliseconds.
fn process_cpu_ns(pid: u32) -> Option<u64> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: clock_getcpuclockid writes one clockid_t through a valid
    // pointer; clock_gettime writes one timespec through a valid pointer.
    unsafe {
        if libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) == 0 {
            let mut ts: libc::timespec = std::mem::zeroed();
            if libc::clock_gettime(clock, &mut ts) == 0 {
                return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
        }
    }
    schedstat_ns(pid)
}

/// Sum of the live threads' on-CPU nanoseconds (first field of
/// /proc/PID/task/TID/schedstat): the fallback when the CPU clock cannot
/// be read.
fn schedstat_ns(pid: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut sum = 0u64;
    for t in tasks.flatten() {
        let text = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        sum += text
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(sum)
}

/// What the root's reaped children used (cutime + cstime), in
/// nanoseconds: a prefork worker restarted mid-run still counts. Clock
/// ticks are all the kernel offers for these.
fn reaped_children_ns(root: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{root}/stat")) else {
        return 0;
    };
    let f = stat_fields(&stat);
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // rest starts at field 3 (state): cutime=16, cstime=17.
    let ticks = n(13) + n(14);
    (ticks as f64 / ticks_per_second() * 1e9) as u64
}

/// The tree's user and system CPU so far, in ms: every living process's
/// utime and stime, plus what the root reaped (cutime, cstime). A process
/// that ended between two readings is left out of the later one, so the
/// split is a share, not an exact account.
fn user_system_ms(root: u32) -> (f64, f64) {
    let ms = 1e3 / ticks_per_second();
    let mut sum = (0.0, 0.0);
    for pid in tree(root) {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let f = stat_fields(&stat);
        let n = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        // rest starts at field 3 (state): utime=14, stime=15, cutime=16,
        // cstime=17; only the root's reaped children are the tree's.
        sum.0 += n(11) * ms;
        sum.1 += n(12) * ms;
        if pid == root {
            sum.0 += n(13) * ms;
            sum.1 += n(14) * ms;
        }
    }
    sum
}

/// CPU nanoseconds of every process in the tree, by pid, plus what the
/// root has reaped.
#[derive(Debug, Default)]
struct TreeCpu {
    by_pid: Vec<(u32, u64)>,
    reaped: u64,
}

impl TreeCpu {
    fn read(root: u32) -> TreeCpu {
        TreeCpu {
            by_pid: tree(root)
                .into_iter()
                .filter_map(|p| process_cpu_ns(p).map(|ns| (p, ns)))
                .collect(),
            reaped: reaped_children_ns(root),
        }
    }

    /// Nanoseconds used between `self` and `later`, per process: one that
    /// started in between counts from zero, one that ended in between is
    /// left out rather than counted negative.
    fn used_until(&self, later: &TreeCpu) -> u64 {
        let mut sum = later.reaped.saturating_sub(self.reaped);
        for &(pid, end) in &later.by_pid {
            let start = self
                .by_pid
                .iter()
                .find(|(p, _)| *p == pid)
                .map_or(0, |(_, ns)| *ns);
            sum += end.saturating_sub(start);
        }
        sum
    }
}

/// More than this share of a core (%) used by a server with no client
/// is busy while idle (`loadlab check`'s busy-when-idle; a sweep marks
/// the runs of other targets made meanwhile as disturbed).
pub const IDLE_CPU_LIMIT_PCT: f64 = 20.0;

/// A process tree's CPU clocks at one moment, without a sampling thread:
/// two marks give what the tree used in between.
#[derive(Debug, Default)]
pub struct CpuMark(TreeCpu);

impl CpuMark {
    pub fn read(root: u32) -> CpuMark {
        CpuMark(TreeCpu::read(root))
    }

    /// CPU nanoseconds the tree used from `self` to `later`.
    pub fn used_ns_until(&self, later: &CpuMark) -> u64 {
        self.0.used_until(&later.0)
    }
}

/// What the scheduler says of one thread so far: its context switches
/// (voluntary + involuntary) and the nanoseconds it waited, ready, for a
/// CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Sched {
    switches: u64,
    wait_ns: u64,
    /// Of `switches`, those the scheduler forced (status's
    /// nonvoluntary_ctxt_switches), as of the last status read.
    involuntary: u64,
}

impl Sched {
    fn max(self, o: Sched) -> Sched {
        Sched {
            switches: self.switches.max(o.switches),
            wait_ns: self.wait_ns.max(o.wait_ns),
            involuntary: self.involuntary.max(o.involuntary),
        }
    }
}

/// Each thread's scheduler figures so far, by thread id.
type Switches = HashMap<u32, Sched>;

/// Reads every living thread's context switches of `pids` into `into`,
/// keeping the larger count for a thread seen before; `status` also reads
/// the involuntary ones (three times the text: not at every sample).
fn read_switches(pids: &[u32], into: &mut Switches, status: Status) {
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let Some(mut n) = thread_sched(&t.path()) else {
                continue;
            };
            if status == Status::Read {
                n.involuntary = involuntary(&t.path()).unwrap_or(0);
            }
            let seen = into.entry(tid).or_default();
            *seen = seen.max(n);
        }
    }
}

/// Whether a reading of the threads also reads their status files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Read,
    Skip,
}

/// Every this many samples, the sampler also reads the involuntary
/// switches (and at the start and the end).
const STATUS_EVERY: u64 = 10;

/// A thread's forced context switches so far.
fn involuntary(task: &std::path::Path) -> Option<u64> {
    let text = std::fs::read_to_string(task.join("status")).ok()?;
    let line = text
        .lines()
        .find(|l| l.starts_with("nonvoluntary_ctxt_switches:"))?;
    line.split(':').nth(1)?.trim().parse().ok()
}

/// One thread's scheduler figures so far. schedstat's third field (times
/// the thread was put on a CPU) equals status's voluntary + nonvoluntary
/// count (checked on thread-per-conn's threads) and is a third of the
/// text to make and read, which matters at 50 ms samples of 1,000
/// threads; its second is the run-queue wait. status is the fallback on
/// kernels without schedstat (no wait there).
fn thread_sched(task: &std::path::Path) -> Option<Sched> {
    if let Ok(text) = std::fs::read_to_string(task.join("schedstat")) {
        let f: Vec<&str> = text.split_whitespace().collect();
        return Some(Sched {
            switches: f.get(2)?.parse().ok()?,
            wait_ns: f.get(1)?.parse().ok()?,
            involuntary: 0,
        });
    }
    let text = std::fs::read_to_string(task.join("status")).ok()?;
    Some(Sched {
        switches: text
            .lines()
            .filter(|l| l.contains("ctxt_switches:"))
            .filter_map(|l| l.split(':').nth(1)?.trim().parse::<u64>().ok())
            .sum(),
        wait_ns: 0,
        involuntary: 0,
    })
}

/// Switches made between `start` and `end` (a thread missing at the
/// start counts from zero).
fn switches_between(start: &Switches, end: &Switches) -> Sched {
    let mut sum = Sched::default();
    for (tid, n) in end {
        let s = start.get(tid).copied().unwrap_or_default();
        sum.switches += n.switches.saturating_sub(s.switches);
        sum.wait_ns += n.wait_ns.saturating_sub(s.wait_ns);
        sum.involuntary += n.involuntary.saturating_sub(s.involuntary);
    }
    sum
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

/// Watches one process tree over a run: CPU time read on the caller's
/// thread when the run starts and when it ends (no race with the load),
/// resident memory sampled by a thread in between.
pub struct Monitor {
    root: u32,
    cpu0: TreeCpu,
    switches0: Switches,
    /// User and system ms of the tree when the run started.
    user_system0: (f64, f64),
    t0: Instant,
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<Sampled>>,
}

/// What the sampling thread saw: peak memory, samples taken, and the last
/// context-switch count of every thread it met.
#[derive(Default)]
struct Sampled {
    peak_rss_kb: u64,
    samples: u64,
    switches: Switches,
}

impl Monitor {
    /// Call right before the load starts.
    pub fn start(root: u32) -> Monitor {
        let mut switches0 = Switches::new();
        read_switches(&tree(root), &mut switches0, Status::Read);
        let cpu0 = TreeCpu::read(root);
        let user_system0 = user_system_ms(root);
        let t0 = Instant::now();
        let (tx, rx) = mpsc::channel::<()>();
        let sampler = move || {
            let mut seen = Sampled::default();
            loop {
                let pids = tree(root);
                let rss: u64 = pids.iter().map(|&p| rss_kb(p)).sum();
                seen.peak_rss_kb = seen.peak_rss_kb.max(rss);
                let status = match seen.samples % STATUS_EVERY {
                    0 => Status::Read,
                    _ => Status::Skip,
                };
                read_switches(&pids, &mut seen.switches, status);
                seen.samples += 1;
                // A message or a dropped sender both mean the run is over;
                // the wait is the sampling period otherwise.
                match rx.recv_timeout(SAMPLE_EVERY) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return seen,
                }
            }
        };
        let handle = std::thread::Builder::new()
            .name("monitor".into())
            .spawn(sampler)
            .ok();
        Monitor {
            root,
            cpu0,
            switches0,
            user_system0,
            t0,
            stop: Some(tx),
            handle,
        }
    }

    /// Call right after the load ends.
    pub fn finish(mut self) -> Usage {
        let cpu1 = TreeCpu::read(self.root);
        let secs = self.t0.elapsed().as_secs_f64().max(1e-9);
        let mut switches1 = Switches::new();
        read_switches(&tree(self.root), &mut switches1, Status::Read);
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let mut seen = self
            .handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        for (tid, n) in switches1 {
            let last = seen.switches.entry(tid).or_default();
            *last = last.max(n);
        }
        let sched = switches_between(&self.switches0, &seen.switches);
        let (user1, system1) = user_system_ms(self.root);
        let cpu_s = self.cpu0.used_until(&cpu1) as f64 / 1e9;
        Usage {
            cpu_pct: cpu_s / secs * 100.0,
            cpu_ms: cpu_s * 1e3,
            ctx_switches: sched.switches,
            ctx_involuntary: sched.involuntary,
            runq_wait_ms: sched.wait_ns as f64 / 1e6,
            cpu_user_ms: (user1 - self.user_system0.0).max(0.0),
            cpu_system_ms: (system1 - self.user_system0.1).max(0.0),
            peak_rss_kb: seen.peak_rss_kb,
            samples: seen.samples,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_that_waits_on_children_shows_cpu_and_switches() {
        // The shell sleeps in wait() for each child: a voluntary switch
        // every 10 ms, and some CPU for each fork.
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "while :; do sleep 0.01; done"])
            .spawn()
            .expect("spawn sh");
        let m = Monitor::start(sh.id());
        std::thread::sleep(Duration::from_millis(300));
        let u = m.finish();
        let _ = sh.kill();
        let _ = sh.wait();
        assert!(u.ctx_switches > 5, "{u:?}");
        // It sleeps of its own accord: few of them forced.
        assert!(u.ctx_involuntary < u.ctx_switches / 2, "{u:?}");
        assert!(u.cpu_ms > 0.0 && u.cpu_pct > 0.0, "{u:?}");
        assert!(u.samples >= 2 && u.peak_rss_kb > 0, "{u:?}");
    }

    #[test]
    fn schedstat_counts_what_status_counts() {
        let task = std::path::PathBuf::from(format!("/proc/self/task/{}", nix::unistd::gettid()));
        let from_status = |t: &std::path::Path| -> u64 {
            let text = std::fs::read_to_string(t.join("status")).unwrap();
            text.lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split(':').nth(1)?.trim().parse::<u64>().ok())
                .sum()
        };
        // Reading a file may itself switch: read until two agree.
        let agreed = (0..20).any(|_| {
            let a = from_status(&task);
            let b = thread_sched(&task).unwrap().switches;
            let c = from_status(&task);
            a == c && (b == a || b == a + 1)
        });
        assert!(agreed, "schedstat and status disagree");
    }

    #[test]
    fn a_thread_that_exits_keeps_its_last_count() {
        let s = |switches: u64| Sched {
            switches,
            wait_ns: switches * 1000,
            involuntary: switches / 2,
        };
        let start = Switches::from([(1, s(10)), (2, s(5))]);
        // Thread 2 exited (last seen at 9), thread 3 started after the
        // start reading.
        let end = Switches::from([(1, s(12)), (2, s(9)), (3, s(4))]);
        assert_eq!(switches_between(&start, &end), s(2 + 4 + 4));
    }
}
