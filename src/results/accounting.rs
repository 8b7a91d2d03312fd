//! A server's accounting over one run, as plain data: syscalls by kind,
//! context switches, run-queue wait and the user/system split of its CPU,
//! and where a row keeps each. What counts them is `proc::syscalls` and
//! `proc::monitor`; what they mean per request is the summary's.

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
    Other,
}

impl SyscallKind {
    pub const ALL: [SyscallKind; 9] = [
        SyscallKind::Reads,
        SyscallKind::Writes,
        SyscallKind::EpollWait,
        SyscallKind::IoUringEnter,
        SyscallKind::Accept,
        SyscallKind::Close,
        SyscallKind::Futex,
        SyscallKind::CloneExit,
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
            SyscallKind::Other => &mut r.server_sys_other,
        }
    }
}

/// What the perf counters counted over one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// By `SyscallKind as usize`; `Other` is kept in `other`.
    pub by_kind: [u64; 8],
    pub other: u64,
    /// Every syscall entered.
    pub total: u64,
    /// perf's inherited context-switches counter.
    pub ctx_switches: u64,
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
}
