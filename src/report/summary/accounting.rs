//! A configuration's server accounting per request: syscalls by kind and
//! context switches (perf's counts), run-queue wait and the user share of
//! its CPU, each over the runs that have the figure and their completed
//! requests, so a run perf could not count leaves the others' figures
//! intact rather than diluting them.

use super::{Group, SummaryRow};
use crate::results::accounting::SyscallKind;
use crate::results::raw::RawRow;

/// Per completed request over the runs where `f` is known; None when no
/// run has it or those runs completed nothing.
fn per_req(g: &Group, f: impl Fn(&RawRow) -> Option<f64>) -> Option<f64> {
    let (sum, complete) = g
        .runs
        .iter()
        .filter_map(|r| f(r).map(|v| (v, r.complete)))
        .fold((0.0, 0u64), |(s, n), (v, c)| (s + v, n + c));
    (complete > 0).then(|| sum / complete as f64)
}

pub fn fill(row: &mut SummaryRow, g: &Group) {
    row.syscalls_per_req = per_req(g, |r| r.server_syscalls.map(|n| n as f64));
    for k in SyscallKind::ALL {
        *row.sys_slot(k) = per_req(g, |r| k.of(r).map(|n| n as f64));
    }
    row.switches_counted_per_req = per_req(g, |r| r.server_switches_counted.map(|n| n as f64));
    row.runq_wait_us_per_req = per_req(g, |r| r.server_runq_wait_ms.map(|ms| ms * 1000.0));
    let (user, system): (f64, f64) = g
        .runs
        .iter()
        .filter_map(|r| r.server_cpu_user_ms.zip(r.server_cpu_system_ms))
        .fold((0.0, 0.0), |(u, s), (a, b)| (u + a, s + b));
    row.cpu_user_pct = (user + system > 0.0).then(|| user / (user + system) * 100.0);
}

impl SummaryRow {
    /// The row's syscalls per request of one kind.
    pub fn sys_per_req(&self, k: SyscallKind) -> Option<f64> {
        match k {
            SyscallKind::Reads => self.sys_reads_per_req,
            SyscallKind::Writes => self.sys_writes_per_req,
            SyscallKind::EpollWait => self.sys_epoll_wait_per_req,
            SyscallKind::IoUringEnter => self.sys_io_uring_enter_per_req,
            SyscallKind::Accept => self.sys_accept_per_req,
            SyscallKind::Close => self.sys_close_per_req,
            SyscallKind::Futex => self.sys_futex_per_req,
            SyscallKind::CloneExit => self.sys_clone_exit_per_req,
            SyscallKind::Other => self.sys_other_per_req,
        }
    }

    fn sys_slot(&mut self, k: SyscallKind) -> &mut Option<f64> {
        match k {
            SyscallKind::Reads => &mut self.sys_reads_per_req,
            SyscallKind::Writes => &mut self.sys_writes_per_req,
            SyscallKind::EpollWait => &mut self.sys_epoll_wait_per_req,
            SyscallKind::IoUringEnter => &mut self.sys_io_uring_enter_per_req,
            SyscallKind::Accept => &mut self.sys_accept_per_req,
            SyscallKind::Close => &mut self.sys_close_per_req,
            SyscallKind::Futex => &mut self.sys_futex_per_req,
            SyscallKind::CloneExit => &mut self.sys_clone_exit_per_req,
            SyscallKind::Other => &mut self.sys_other_per_req,
        }
    }
}
