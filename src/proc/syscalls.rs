//! Counts a server's syscalls by kind and its context switches, with the
//! kernel's perf counters on the syscall tracepoints in counting mode
//! (not ptrace: strace stops the server at every call and changes what it
//! measures). The counters open once, when the lab has started the
//! target, on every thread of every process of its tree, inherited by
//! the threads and processes those start later (a counter's read sums its
//! inherited children, the exited ones too); each run reads them before
//! and after, so starting a counter costs nothing per run.

use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::path::Path;
use std::sync::OnceLock;

use super::monitor::tree;
use crate::results::accounting::{Counts, SyscallKind};

/// Syscalls by kind. Names absent on this architecture (or kernel) are
/// left out; `Other` is the total less these.
const SYSCALLS: &[(&str, SyscallKind)] = &[
    ("read", SyscallKind::Reads),
    ("readv", SyscallKind::Reads),
    ("pread64", SyscallKind::Reads),
    ("recvfrom", SyscallKind::Reads),
    ("recvmsg", SyscallKind::Reads),
    ("recvmmsg", SyscallKind::Reads),
    ("write", SyscallKind::Writes),
    ("writev", SyscallKind::Writes),
    ("pwrite64", SyscallKind::Writes),
    ("sendto", SyscallKind::Writes),
    ("sendmsg", SyscallKind::Writes),
    ("sendmmsg", SyscallKind::Writes),
    ("sendfile64", SyscallKind::Writes),
    ("splice", SyscallKind::Writes),
    ("epoll_wait", SyscallKind::EpollWait),
    ("epoll_pwait", SyscallKind::EpollWait),
    ("epoll_pwait2", SyscallKind::EpollWait),
    ("io_uring_enter", SyscallKind::IoUringEnter),
    ("accept", SyscallKind::Accept),
    ("accept4", SyscallKind::Accept),
    ("close", SyscallKind::Close),
    ("futex", SyscallKind::Futex),
    ("clone", SyscallKind::CloneExit),
    ("clone3", SyscallKind::CloneExit),
    ("fork", SyscallKind::CloneExit),
    ("vfork", SyscallKind::CloneExit),
    ("exit", SyscallKind::CloneExit),
    ("exit_group", SyscallKind::CloneExit),
];

const TRACEFS: &str = "/sys/kernel/tracing/events";
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;
/// perf_event_attr's `inherit` bit: threads and processes the counted
/// task starts later are counted too.
const INHERIT: u64 = 1 << 1;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// perf_event_attr as of its first version (PERF_ATTR_SIZE_VER0, 64
/// bytes): all a counting event needs; the kernel takes the size field
/// for the version.
#[repr(C)]
#[derive(Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// What one event counts into.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Slot {
    Kind(SyscallKind),
    Total,
    Switches,
}

/// The events this kernel has: (perf type, config, slot).
fn events() -> Result<Vec<(u32, u64, Slot)>, String> {
    let id = |path: &str| -> Option<u64> {
        std::fs::read_to_string(Path::new(TRACEFS).join(path).join("id"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let total = match id("raw_syscalls/sys_enter") {
        Some(t) => t,
        // There, but root's alone (tracefs is 0700 to others by default).
        None if std::fs::read_dir(TRACEFS)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied) =>
        {
            return Err(forbidden())
        }
        None => {
            return Err(format!(
                "no syscall tracepoints under {TRACEFS} (as root: mount -t tracefs nodev /sys/kernel/tracing)"
            ))
        }
    };
    let mut out: Vec<(u32, u64, Slot)> = SYSCALLS
        .iter()
        .filter_map(|(name, k)| {
            id(&format!("syscalls/sys_enter_{name}"))
                .map(|i| (PERF_TYPE_TRACEPOINT, i, Slot::Kind(*k)))
        })
        .collect();
    out.push((PERF_TYPE_TRACEPOINT, total, Slot::Total));
    out.push((
        PERF_TYPE_SOFTWARE,
        PERF_COUNT_SW_CONTEXT_SWITCHES,
        Slot::Switches,
    ));
    Ok(out)
}

/// One counter on one thread, inherited by what it starts.
fn open(kind: u32, config: u64, tid: i32) -> std::io::Result<File> {
    let attr = Attr {
        kind,
        size: std::mem::size_of::<Attr>() as u32,
        config,
        flags: INHERIT,
        ..Attr::default()
    };
    // SAFETY: perf_event_open reads one perf_event_attr of `size` bytes
    // through a valid pointer; the fd it returns is ours alone.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const Attr,
            tid,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a new descriptor nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd as i32) })
}

/// Why this host cannot count a server's syscalls, with how to enable it;
/// None when it can. Tried once per process, on this process's own thread.
pub fn unavailable() -> Option<&'static str> {
    static WHY: OnceLock<Option<String>> = OnceLock::new();
    WHY.get_or_init(probe).as_deref()
}

fn probe() -> Option<String> {
    let events = match events() {
        Ok(e) => e,
        Err(why) => return Some(why),
    };
    let (kind, config, _) = events[0];
    match open(kind, config, 0) {
        Ok(_) => None,
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => Some(forbidden()),
        Err(e) => Some(format!("the kernel refused a perf counter: {e}")),
    }
}

/// Why a user who is not root may not count: the host's settings.
fn forbidden() -> String {
    let paranoid =
        std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
    format!(
        "perf_event_paranoid is {} and the syscall tracepoints are root's (run loadlab as root, or as root: sysctl kernel.perf_event_paranoid=-1 and chmod -R a+rX /sys/kernel/tracing)",
        paranoid.trim()
    )
}

/// Counters on every thread of a process tree.
#[derive(Debug)]
pub struct Counters {
    open: Vec<(Slot, File)>,
}

impl Counters {
    /// Opens the counters on every thread of `root`'s tree as it is now;
    /// what those threads start later is inherited.
    pub fn open(root: u32) -> Result<Counters, String> {
        if let Some(why) = unavailable() {
            return Err(why.to_string());
        }
        let events = events()?;
        let mut open = Vec::new();
        for pid in tree(root) {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for tid in tasks
                .flatten()
                .filter_map(|t| t.file_name().to_str()?.parse().ok())
            {
                for &(kind, config, slot) in &events {
                    match open_counter(kind, config, tid) {
                        Ok(Some(f)) => open.push((slot, f)),
                        // The thread ended since the listing.
                        Ok(None) => {}
                        Err(e) => return Err(format!("cannot count thread {tid}'s syscalls: {e}")),
                    }
                }
            }
        }
        Ok(Counters { open })
    }

    /// The counts so far, summed over threads.
    pub fn read(&self) -> Counts {
        let mut c = Counts::default();
        for (slot, f) in &self.open {
            let mut buf = [0u8; 8];
            let n = match (&*f).read(&mut buf) {
                Ok(8) => u64::from_ne_bytes(buf),
                _ => continue,
            };
            match slot {
                Slot::Kind(k) => c.by_kind[*k as usize] += n,
                Slot::Total => c.total += n,
                Slot::Switches => c.ctx_switches += n,
            }
        }
        c
    }
}

/// A counter on `tid`; None when the thread is gone.
fn open_counter(kind: u32, config: u64, tid: i32) -> std::io::Result<Option<File>> {
    match open(kind, config, tid) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(None),
        Err(e) => Err(e),
    }
}

/// What was counted from `before` to `after`: `other` is the total less
/// the named kinds.
pub fn between(before: &Counts, after: &Counts) -> Counts {
    let mut c = Counts {
        total: after.total.saturating_sub(before.total),
        ctx_switches: after.ctx_switches.saturating_sub(before.ctx_switches),
        ..Counts::default()
    };
    for (i, n) in c.by_kind.iter_mut().enumerate() {
        *n = after.by_kind[i].saturating_sub(before.by_kind[i]);
    }
    c.other = c.total.saturating_sub(c.by_kind.iter().sum());
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_s_reads_are_counted_and_its_new_threads_inherited() {
        if let Some(why) = unavailable() {
            panic!("this host must count syscalls: {why}");
        }
        // A child that reads /dev/zero 1,000 times from a thread it
        // starts after the counters open.
        let mut child = std::process::Command::new("python3")
            .args([
                "-c",
                "import os,sys,threading,time\nprint('ready',flush=True)\nsys.stdin.read(1)\nf=os.open('/dev/zero',0)\nt=threading.Thread(target=lambda:[os.read(f,1) for _ in range(1000)])\nt.start();t.join()\ntime.sleep(5)",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3");
        // Counted only once it has started up and waits for us.
        let mut ready = [0u8; 6];
        child.stdout.take().unwrap().read_exact(&mut ready).unwrap();
        let c = Counters::open(child.id()).expect("counters");
        let before = c.read();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"x").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let d = between(&before, &c.read());
        let _ = child.kill();
        let _ = child.wait();
        let reads = d.by_kind[SyscallKind::Reads as usize];
        assert!((1000..1200).contains(&reads), "{d:?}");
        assert!(d.by_kind[SyscallKind::CloneExit as usize] >= 2, "{d:?}");
        assert!(d.total >= reads + d.other && d.ctx_switches > 0, "{d:?}");
    }
}
