//! Restricting a child process to the first N CPUs it may use
//! (sched_setaffinity), as the E4 study does with `--cpus`, and keeping
//! the load generator off the CPUs such a server was given.

use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// The CPUs this process may run on, ascending. A container or `taskset`
/// may allow 2-3 and not 0-1, so "the first N CPUs" must come from here,
/// not from 0..N.
pub fn allowed_cpus() -> Vec<usize> {
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        // No affinity to read (not Linux?): assume every core is ours.
        Err(_) => (0..crate::sys::cores()).collect(),
    }
}

/// "0-1,4" style list, as /proc/PID/status prints it.
pub fn list_text(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The first `n` allowed CPUs, or a one-line error saying how many there are.
pub fn first_allowed(n: usize) -> Result<Vec<usize>, String> {
    let allowed = allowed_cpus();
    if n == 0 || n > allowed.len() {
        return Err(format!(
            "--cpus {n}: loadlab may use {} CPU{} ({})",
            allowed.len(),
            if allowed.len() == 1 { "" } else { "s" },
            list_text(&allowed)
        ));
    }
    Ok(allowed[..n].to_vec())
}

/// Makes `cmd` start restricted to the first `n` CPUs this process may
/// use; its threads and children inherit the mask.
pub fn restrict(cmd: &mut Command, n: usize) -> anyhow::Result<()> {
    let cpus = first_allowed(n).map_err(anyhow::Error::msg)?;
    // Built before fork: nothing is allocated between fork and exec.
    let mut set = CpuSet::new();
    for c in cpus {
        set.set(c)?;
    }
    // SAFETY: sched_setaffinity is a plain syscall that allocates and locks
    // nothing, so it is safe between fork and exec; `set` is a plain value
    // moved into the closure.
    unsafe {
        cmd.pre_exec(move || {
            sched_setaffinity(Pid::from_raw(0), &set).map_err(std::io::Error::from)
        });
    }
    Ok(())
}

/// The allowed CPUs left once a server pinned with `--cpus n` has the
/// first `n`: where the load generator goes. Empty when none are left.
pub fn others_than_first(n: usize) -> Vec<usize> {
    allowed_cpus().into_iter().skip(n).collect()
}

/// The target's CPU count when none is given: half of the CPUs loadlab
/// may use (at least one), so client and server each have their own; None
/// (share them all) with a single CPU.
pub fn default_split() -> Option<usize> {
    let n = allowed_cpus().len();
    (n >= 2).then_some(n / 2)
}

/// The last `n` of the CPUs this process may use: where `--client-cpus`
/// puts the load generator.
pub fn last_allowed(n: usize) -> Vec<usize> {
    let allowed = allowed_cpus();
    allowed[allowed.len().saturating_sub(n)..].to_vec()
}

/// The calling thread's CPU mask before `pin_current_thread`, put back
/// when dropped.
#[derive(Debug)]
pub struct PinnedThread {
    before: CpuSet,
}

/// Restricts the calling thread to `cpus` until the guard is dropped.
/// Threads it starts meanwhile inherit the mask (pthread_create(3)), which
/// is how the load generator's threads are kept off the server's CPUs
/// without the load generator knowing.
pub fn pin_current_thread(cpus: &[usize]) -> anyhow::Result<PinnedThread> {
    let before = sched_getaffinity(Pid::from_raw(0))?;
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c)?;
    }
    sched_setaffinity(Pid::from_raw(0), &set)?;
    Ok(PinnedThread { before })
}

impl Drop for PinnedThread {
    fn drop(&mut self) {
        let _ = sched_setaffinity(Pid::from_raw(0), &self.before);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_like_proc_status() {
        assert_eq!(list_text(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(list_text(&[3]), "3");
        assert_eq!(list_text(&[]), "");
    }

    #[test]
    fn first_allowed_takes_from_the_allowed_set() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        assert_eq!(first_allowed(1).unwrap(), vec![allowed[0]]);
        let err = first_allowed(allowed.len() + 1).unwrap_err();
        assert!(err.contains(&list_text(&allowed)), "{err}");
        assert!(first_allowed(0).is_err());
    }

    #[test]
    fn a_pinned_thread_and_its_children_keep_the_mask_until_the_guard_drops() {
        // On a thread of its own: the test harness's thread is shared.
        std::thread::spawn(|| {
            let allowed = allowed_cpus();
            let last = *allowed.last().unwrap();
            let guard = pin_current_thread(&[last]).unwrap();
            assert_eq!(allowed_cpus(), vec![last]);
            let inherited = std::thread::spawn(allowed_cpus).join().unwrap();
            assert_eq!(inherited, vec![last], "a thread started meanwhile");
            drop(guard);
            assert_eq!(allowed_cpus(), allowed);
        })
        .join()
        .unwrap();
        assert_eq!(others_than_first(allowed_cpus().len()), Vec::<usize>::new());
        assert_eq!(others_than_first(0), allowed_cpus());
    }
}
