//! Restricting a child process to the first N CPUs (sched_setaffinity), as
//! the E4 study does with `--cpus`.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Restricts the calling process to CPUs 0..n; its threads and children
/// inherit the mask.
fn pin_first_cpus(n: usize) -> std::io::Result<()> {
    use nix::sched::{sched_setaffinity, CpuSet};
    let mut set = CpuSet::new();
    for cpu in 0..n {
        set.set(cpu).map_err(std::io::Error::from)?;
    }
    sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(std::io::Error::from)
}

/// Makes `cmd` start restricted to the first `n` CPUs.
pub fn restrict(cmd: &mut Command, n: usize) {
    // SAFETY: sched_setaffinity is a plain syscall that allocates and locks
    // nothing, so it is safe between fork and exec.
    unsafe {
        cmd.pre_exec(move || pin_first_cpus(n));
    }
}
