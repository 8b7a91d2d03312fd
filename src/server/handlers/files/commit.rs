//! The upload directory's commit lock: every change of a name (an upload's
//! rename, a delete) re-checks its conditions under it and holds it until
//! done, so of two racing changes the second sees the first's result.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::reply::write_failure;
use crate::server::handlers::validators::{Conditions, Validators};
use crate::server::handlers::Response;

/// The held lock; dropping it (closing the descriptor) releases it.
pub struct Held(#[allow(dead_code)] File);

/// The validators of `name`'s current version, None without a regular
/// file; the early check and the one under the lock share this rule.
pub fn current(dir: &Path, name: &str) -> Option<Validators> {
    std::fs::metadata(dir.join(name))
        .ok()
        .filter(|m| m.is_file())
        .map(|m| Validators::for_file(&m))
}

/// Takes the directory's lock, then checks `conditions` against `name`'s
/// current version: the lock to make the change under, or the response to
/// give instead (412, or 500 when the lock cannot be taken). Only the check
/// and the rename belong under it: the file's fsync comes before, the
/// directory's after.
pub fn hold(dir: &Path, name: &str, conditions: &Conditions) -> Result<Held, Response> {
    let held = lock(dir).map_err(|e| write_failure(&e))?;
    match conditions.check(current(dir, name).as_ref()) {
        Some(status) => Err(Response::error(status)),
        None => Ok(held),
    }
}

/// An exclusive flock on the directory, opened anew per change: it belongs
/// to the open file description, so threads exclude each other as processes
/// do, a killed holder releases it, and no lock file clutters the directory.
fn lock(dir: &Path) -> io::Result<Held> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(dir)?;
    loop {
        // SAFETY: flock only reads its integer arguments; the descriptor
        // belongs to `f`, which outlives the call.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(Held(f));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    #[test]
    fn the_lock_excludes_another_holder_in_the_same_process() {
        let dir = tempfile::tempdir().unwrap();
        let first = hold(dir.path(), "x", &Conditions::default()).unwrap();
        let (tx, rx) = channel();
        let path = dir.path().to_path_buf();
        let t = std::thread::spawn(move || {
            let _second = hold(&path, "x", &Conditions::default()).unwrap();
            tx.send(()).unwrap();
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "taken twice"
        );
        drop(first);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        t.join().unwrap();
    }
}
