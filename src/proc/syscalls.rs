//! Counts a server's syscalls by kind, its context switches and its
//! io_uring submissions by opcode, with the kernel's perf counters on the
//! syscall and io_uring tracepoints in counting mode (not ptrace: strace
//! stops the server at every call and changes what it measures). The
//! counters open on every thread of every process of the target's tree,
//! inherited by the threads and processes those start later (a counter's
//! read sums its inherited children, the exited ones too). While they are
//! open every syscall on the host is slower, so the lab opens them for a
//! counting pass of its own, not over measured runs.

use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::path::Path;
use std::sync::OnceLock;

use super::monitor::tree;
use crate::results::accounting::{Counts, SyscallKind};

/// Syscalls by kind, by number (the calls an architecture lacks are left
/// out by it); `Other` is the total less these. One tracepoint
/// (raw_syscalls:sys_enter) with a filter on the number per kind: every
/// distinct tracepoint a counter opens costs its close an RCU grace
/// period, tens of ms, which a pass per cell cannot afford.
const SYSCALLS: &[(libc::c_long, SyscallKind)] = &[
    (libc::SYS_read, SyscallKind::Reads),
    (libc::SYS_readv, SyscallKind::Reads),
    (libc::SYS_pread64, SyscallKind::Reads),
    (libc::SYS_recvfrom, SyscallKind::Reads),
    (libc::SYS_recvmsg, SyscallKind::Reads),
    (libc::SYS_recvmmsg, SyscallKind::Reads),
    (libc::SYS_write, SyscallKind::Writes),
    (libc::SYS_writev, SyscallKind::Writes),
    (libc::SYS_pwrite64, SyscallKind::Writes),
    (libc::SYS_sendto, SyscallKind::Writes),
    (libc::SYS_sendmsg, SyscallKind::Writes),
    (libc::SYS_sendmmsg, SyscallKind::Writes),
    (libc::SYS_sendfile, SyscallKind::Writes),
    (libc::SYS_splice, SyscallKind::Writes),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_epoll_wait, SyscallKind::EpollWait),
    (libc::SYS_epoll_pwait, SyscallKind::EpollWait),
    (libc::SYS_epoll_pwait2, SyscallKind::EpollWait),
    (libc::SYS_io_uring_enter, SyscallKind::IoUringEnter),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_accept, SyscallKind::Accept),
    (libc::SYS_accept4, SyscallKind::Accept),
    (libc::SYS_close, SyscallKind::Close),
    (libc::SYS_futex, SyscallKind::Futex),
    (libc::SYS_clone, SyscallKind::CloneExit),
    (libc::SYS_clone3, SyscallKind::CloneExit),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_fork, SyscallKind::CloneExit),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_vfork, SyscallKind::CloneExit),
    (libc::SYS_exit, SyscallKind::CloneExit),
    (libc::SYS_exit_group, SyscallKind::CloneExit),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_poll, SyscallKind::Poll),
    (libc::SYS_ppoll, SyscallKind::Poll),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_select, SyscallKind::Poll),
    (libc::SYS_pselect6, SyscallKind::Poll),
    (libc::SYS_mmap, SyscallKind::Memory),
    (libc::SYS_munmap, SyscallKind::Memory),
    (libc::SYS_mprotect, SyscallKind::Memory),
    (libc::SYS_madvise, SyscallKind::Memory),
    (libc::SYS_mremap, SyscallKind::Memory),
    (libc::SYS_brk, SyscallKind::Memory),
    (libc::SYS_rt_sigprocmask, SyscallKind::ThreadSetup),
    (libc::SYS_sigaltstack, SyscallKind::ThreadSetup),
    (libc::SYS_set_robust_list, SyscallKind::ThreadSetup),
    (libc::SYS_rseq, SyscallKind::ThreadSetup),
    (libc::SYS_prctl, SyscallKind::ThreadSetup),
    (libc::SYS_gettid, SyscallKind::ThreadSetup),
    (libc::SYS_sched_getaffinity, SyscallKind::ThreadSetup),
    (libc::SYS_set_tid_address, SyscallKind::ThreadSetup),
    (libc::SYS_setsockopt, SyscallKind::SockOpt),
    (libc::SYS_getsockopt, SyscallKind::SockOpt),
    (libc::SYS_ioctl, SyscallKind::SockOpt),
    (libc::SYS_fcntl, SyscallKind::SockOpt),
];

/// io_uring submissions by opcode (its reads and sends are ring
/// entries, not syscalls); every other opcode is `other`.
const RING_OPS: &[(&str, u8)] = {
    use io_uring::opcode as op;
    &[
        ("accept", op::Accept::CODE),
        ("recv", op::Recv::CODE),
        ("recvmsg", op::RecvMsg::CODE),
        ("read", op::Read::CODE),
        ("readv", op::Readv::CODE),
        ("send", op::Send::CODE),
        ("send_zc", op::SendZc::CODE),
        ("sendmsg", op::SendMsg::CODE),
        ("write", op::Write::CODE),
        ("writev", op::Writev::CODE),
        ("splice", op::Splice::CODE),
        ("poll_add", op::PollAdd::CODE),
        ("timeout", op::Timeout::CODE),
        ("async_cancel", op::AsyncCancel::CODE),
        ("close", op::Close::CODE),
    ]
};

const TRACEFS: &str = "/sys/kernel/tracing/events";
/// Where a ring's submissions are seen, one event per request entry.
const RING_SUBMIT: &str = "io_uring/io_uring_submit_req";
/// ioctl(PERF_EVENT_IOC_SET_FILTER): a tracepoint filter; inherited
/// counters use their parent's.
const PERF_EVENT_IOC_SET_FILTER: libc::c_ulong = 0x4008_2406;
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
    /// Ring submissions of the RING_OPS entry at this index.
    RingOp(usize),
    RingTotal,
}

/// One event to open on each thread: perf type, config, where its
/// count goes, and a tracepoint filter.
#[derive(Debug, Clone)]
struct Event {
    kind: u32,
    config: u64,
    slot: Slot,
    filter: Option<String>,
}

/// The events this kernel has.
fn events() -> Result<Vec<Event>, String> {
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
    let tracepoint = |config, slot, filter| Event {
        kind: PERF_TYPE_TRACEPOINT,
        config,
        slot,
        filter,
    };
    let mut out: Vec<Event> = SyscallKind::ALL
        .iter()
        .filter_map(|&k| {
            let ids: Vec<String> = SYSCALLS
                .iter()
                .filter(|(_, kind)| *kind == k)
                .map(|(nr, _)| format!("id == {nr}"))
                .collect();
            (!ids.is_empty()).then(|| tracepoint(total, Slot::Kind(k), Some(ids.join(" || "))))
        })
        .collect();
    out.push(tracepoint(total, Slot::Total, None));
    out.push(Event {
        kind: PERF_TYPE_SOFTWARE,
        config: PERF_COUNT_SW_CONTEXT_SWITCHES,
        slot: Slot::Switches,
        filter: None,
    });
    // A kernel without io_uring's tracepoints counts no ring entries.
    if let Some(ring) = id(RING_SUBMIT) {
        out.push(tracepoint(ring, Slot::RingTotal, None));
        for (i, &(_, code)) in RING_OPS.iter().enumerate() {
            out.push(tracepoint(
                ring,
                Slot::RingOp(i),
                Some(format!("opcode == {code}")),
            ));
        }
    }
    Ok(out)
}

/// Makes `f` count only the events `filter` (the tracepoint's filter
/// syntax) lets through.
fn set_filter(f: &File, filter: &str) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let filter = std::ffi::CString::new(filter).map_err(std::io::Error::other)?;
    // SAFETY: the ioctl reads one NUL-terminated string through a valid
    // pointer, on a perf fd we own.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), PERF_EVENT_IOC_SET_FILTER, filter.as_ptr()) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
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
    let first = &events[0];
    match open(first.kind, first.config, 0) {
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
                for e in &events {
                    match open_counter(e.kind, e.config, tid) {
                        Ok(Some(f)) => {
                            if let Some(filter) = &e.filter {
                                set_filter(&f, filter).map_err(|err| {
                                    format!(
                                        "cannot filter thread {tid}'s counter ({filter}): {err}"
                                    )
                                })?;
                            }
                            open.push((e.slot, f));
                        }
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
                Slot::RingOp(i) => *c.ring.entry(RING_OPS[*i].0.to_string()).or_default() += n,
                Slot::RingTotal => c.ring_total += n,
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
    for (op, n) in &after.ring {
        let was = before.ring.get(op).copied().unwrap_or(0);
        c.ring.insert(op.clone(), n.saturating_sub(was));
    }
    c.ring_total = after.ring_total.saturating_sub(before.ring_total);
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
