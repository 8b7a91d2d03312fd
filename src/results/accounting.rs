//! A server's accounting over one run, as plain data: syscalls by kind,
//! context switches, run-queue wait and the user/system split of its CPU,
//! and where a row keeps each. What counts them is `proc::syscalls` and
//! `proc::monitor`; what they mean per request is the summary's.

use std::collections::BTreeMap;

use super::raw::RawRow;

/// The kinds syscalls are counted in; `Other` is every syscall not named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyscallKind {
    Reads,
    Writes,
    EpollWait,
    IoUringEnter,
    Accept,
    Close,
    Futex,
    CloneExit,
    Poll,
    Memory,
    ThreadSetup,
    SockOpt,
    Other,
}

impl SyscallKind {
    pub const ALL: [SyscallKind; 13] = [
        SyscallKind::Reads,
        SyscallKind::Writes,
        SyscallKind::EpollWait,
        SyscallKind::IoUringEnter,
        SyscallKind::Accept,
        SyscallKind::Close,
        SyscallKind::Futex,
        SyscallKind::CloneExit,
        SyscallKind::Poll,
        SyscallKind::Memory,
        SyscallKind::ThreadSetup,
        SyscallKind::SockOpt,
        SyscallKind::Other,
    ];

    /// How tables head the kind.
    pub fn label(self) -> &'static str {
        match self {
            SyscallKind::Reads => "read",
            SyscallKind::Writes => "write",
            SyscallKind::EpollWait => "epoll_wait",
            SyscallKind::IoUringEnter => "io_uring_enter",
            SyscallKind::Accept => "accept",
            SyscallKind::Close => "close",
            SyscallKind::Futex => "futex",
            SyscallKind::CloneExit => "clone+exit",
            SyscallKind::Poll => "poll",
            SyscallKind::Memory => "memory",
            SyscallKind::ThreadSetup => "thread set-up",
            SyscallKind::SockOpt => "sockopt",

            SyscallKind::Other => "other",
        }
    }

    /// The row's count of this kind over the run; None when not counted.
    pub fn of(self, r: &RawRow) -> Option<u64> {
        match self {
            SyscallKind::Reads => r.server_sys_reads,
            SyscallKind::Writes => r.server_sys_writes,
            SyscallKind::EpollWait => r.server_sys_epoll_wait,
            SyscallKind::IoUringEnter => r.server_sys_io_uring_enter,
            SyscallKind::Accept => r.server_sys_accept,
            SyscallKind::Close => r.server_sys_close,
            SyscallKind::Futex => r.server_sys_futex,
            SyscallKind::CloneExit => r.server_sys_clone_exit,
            SyscallKind::Poll => r.server_sys_poll,
            SyscallKind::Memory => r.server_sys_memory,
            SyscallKind::ThreadSetup => r.server_sys_thread_setup,
            SyscallKind::SockOpt => r.server_sys_sockopt,

            SyscallKind::Other => r.server_sys_other,
        }
    }

    /// The row's column for this kind.
    fn slot(self, r: &mut RawRow) -> &mut Option<u64> {
        match self {
            SyscallKind::Reads => &mut r.server_sys_reads,
            SyscallKind::Writes => &mut r.server_sys_writes,
            SyscallKind::EpollWait => &mut r.server_sys_epoll_wait,
            SyscallKind::IoUringEnter => &mut r.server_sys_io_uring_enter,
            SyscallKind::Accept => &mut r.server_sys_accept,
            SyscallKind::Close => &mut r.server_sys_close,
            SyscallKind::Futex => &mut r.server_sys_futex,
            SyscallKind::CloneExit => &mut r.server_sys_clone_exit,
            SyscallKind::Poll => &mut r.server_sys_poll,
            SyscallKind::Memory => &mut r.server_sys_memory,
            SyscallKind::ThreadSetup => &mut r.server_sys_thread_setup,
            SyscallKind::SockOpt => &mut r.server_sys_sockopt,

            SyscallKind::Other => &mut r.server_sys_other,
        }
    }
}

/// What the perf counters counted over one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// By `SyscallKind as usize`; `Other` is kept in `other`.
    pub by_kind: [u64; SyscallKind::ALL.len() - 1],
    pub other: u64,
    /// Every syscall entered.
    pub total: u64,
    /// perf's inherited context-switches counter.
    pub ctx_switches: u64,
    /// io_uring submissions of the named opcodes; empty where the kernel
    /// has no io_uring tracepoints.
    pub ring: BTreeMap<String, u64>,
    /// Every io_uring submission, named opcodes or not.
    pub ring_total: u64,
}

/// A ring's submissions by opcode as raw.csv keeps them: `op=n` pairs,
/// space-separated, the named opcodes that occurred and `other`.
pub fn ring_text(c: &Counts) -> String {
    let named: u64 = c.ring.values().sum();
    c.ring
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(op, n)| format!("{op}={n}"))
        .chain((c.ring_total > named).then(|| format!("other={}", c.ring_total - named)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `op=n` pairs read back (counts, or the summary's per-request
/// figures); a malformed pair is left out.
pub fn ring_ops<T: std::str::FromStr>(text: &str) -> Vec<(String, T)> {
    text.split_whitespace()
        .filter_map(|pair| {
            let (op, n) = pair.split_once('=')?;
            Some((op.to_string(), n.parse().ok()?))
        })
        .collect()
}

/// Puts `c` into the row's accounting columns.
pub fn fill(r: &mut RawRow, c: &Counts) {
    for k in SyscallKind::ALL {
        *k.slot(r) = Some(match k {
            SyscallKind::Other => c.other,
            k => c.by_kind[k as usize],
        });
    }
    r.server_syscalls = Some(c.total);
    r.server_switches_counted = Some(c.ctx_switches);
    // A server that submitted nothing to a ring has no ring column.
    r.server_ring_ops = (c.ring_total > 0).then(|| ring_text(c));
}

/// Copies the counted columns (syscalls, switches, ring submissions and
/// the requests they cover) from the row that counted them to another.
pub fn copy_counts(from: &RawRow, to: &mut RawRow) {
    for k in SyscallKind::ALL {
        *k.slot(to) = k.of(from);
    }
    to.server_syscalls = from.server_syscalls;
    to.server_switches_counted = from.server_switches_counted;
    to.server_ring_ops = from.server_ring_ops.clone();
    to.server_counted_requests = from.server_counted_requests;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_submissions_by_opcode_read_back_as_written() {
        let c = Counts {
            ring: [("recv", 0), ("send", 1200), ("accept", 3)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            ring_total: 1210,
            ..Counts::default()
        };
        let text = ring_text(&c);
        assert_eq!(text, "accept=3 send=1200 other=7");
        assert_eq!(
            ring_ops::<u64>(&text),
            vec![
                ("accept".into(), 3),
                ("send".into(), 1200),
                ("other".into(), 7)
            ]
        );
        assert!(ring_ops::<u64>("send=x bogus recv=2") == vec![("recv".to_string(), 2)]);
    }
}
