//! A configuration's server accounting per request: syscalls by kind and
//! context switches (perf's counts), run-queue wait and the user share of
//! its CPU, each over the runs that have the figure and their completed
//! requests, so a run perf could not count leaves the others' figures
//! intact rather than diluting them.

use super::{Group, SummaryRow};
use crate::results::accounting::{self, SyscallKind};
use crate::results::raw::RawRow;

/// Per request over the runs where `f` is known, each run's requests
/// given by `requests`; None when no run has it or those runs completed
/// nothing.
fn per(
    g: &Group,
    requests: impl Fn(&RawRow) -> u64,
    f: impl Fn(&RawRow) -> Option<f64>,
) -> Option<f64> {
    let (sum, complete) = g
        .runs
        .iter()
        .filter_map(|r| f(r).map(|v| (v, requests(r))))
        .fold((0.0, 0u64), |(s, n), (v, c)| (s + v, n + c));
    (complete > 0).then(|| sum / complete as f64)
}

/// The requests a run's perf counts cover: its counting pass's, or the
/// run's own where it was counted over itself (older files).
fn counted(r: &RawRow) -> u64 {
    r.server_counted_requests.unwrap_or(r.complete)
}

/// A ring's submissions per request by opcode, as `op=n` pairs.
fn ring_per_req(g: &Group) -> Option<String> {
    let mut by_op: Vec<(String, u64)> = Vec::new();
    let mut requests = 0;
    for r in &g.runs {
        let Some(text) = &r.server_ring_ops else {
            continue;
        };
        requests += counted(r);
        for (op, n) in accounting::ring_ops::<u64>(text) {
            match by_op.iter_mut().find(|(o, _)| *o == op) {
                Some((_, sum)) => *sum += n,
                None => by_op.push((op, n)),
            }
        }
    }
    (requests > 0).then(|| {
        by_op
            .iter()
            .map(|(op, n)| format!("{op}={:.3}", *n as f64 / requests as f64))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

pub fn fill(row: &mut SummaryRow, g: &Group) {
    let per_counted = |f: &dyn Fn(&RawRow) -> Option<f64>| per(g, counted, f);
    row.syscalls_per_req = per_counted(&|r| r.server_syscalls.map(|n| n as f64));
    for k in SyscallKind::ALL {
        *row.sys_slot(k) = per_counted(&|r| k.of(r).map(|n| n as f64));
    }
    row.switches_counted_per_req = per_counted(&|r| r.server_switches_counted.map(|n| n as f64));
    row.ring_ops_per_req = ring_per_req(g);
    row.runq_wait_us_per_req = per(
        g,
        |r| r.complete,
        |r| r.server_runq_wait_ms.map(|ms| ms * 1000.0),
    );
    row.involuntary_per_req = per(
        g,
        |r| r.complete,
        |r| r.server_ctx_involuntary.map(|n| n as f64),
    );
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
            SyscallKind::Poll => self.sys_poll_per_req,
            SyscallKind::Memory => self.sys_memory_per_req,
            SyscallKind::ThreadSetup => self.sys_thread_setup_per_req,
            SyscallKind::SockOpt => self.sys_sockopt_per_req,

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
            SyscallKind::Poll => &mut self.sys_poll_per_req,
            SyscallKind::Memory => &mut self.sys_memory_per_req,
            SyscallKind::ThreadSetup => &mut self.sys_thread_setup_per_req,
            SyscallKind::SockOpt => &mut self.sys_sockopt_per_req,

            SyscallKind::Other => &mut self.sys_other_per_req,
        }
    }
}
