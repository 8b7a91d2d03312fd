//! Temporary upload files: their names, the flock a live upload holds on
//! its file while it lives, and the removal of unlocked ones, which a
//! killed server or prefork worker left (at startup and on worker reap).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

pub use crate::results::files::is_temp_name;

/// Takes the lock that marks a freshly created temporary file as in use.
/// False when a starting server's cleanup locked it first and removes it:
/// the caller then makes another.
pub fn claim(file: &File) -> io::Result<bool> {
    match try_lock(file) {
        // Locked, but the cleanup may have unlinked it just before.
        Ok(true) => Ok(file.metadata()?.nlink() > 0),
        Ok(false) => Ok(false),
        // A file system without flock: upload anyway. The cleanup cannot
        // lock such files either, so it leaves them alone.
        Err(_) => Ok(true),
    }
}

/// Removes the abandoned temporary files in `dir` and returns how many:
/// regular files passing `is_temp_name` that nobody holds locked (the
/// kernel drops a dead owner's flock). Anything unsure is left alone.
pub fn remove_stale_uploads(dir: &Path) -> io::Result<usize> {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_temp_name) {
            continue;
        }
        // The directory entry's type: a symlink is not followed.
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if remove_if_abandoned(&entry.path()).unwrap_or(false) {
            removed += 1;
        }
    }
    Ok(removed)
}

fn remove_if_abandoned(path: &Path) -> io::Result<bool> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !try_lock(&file)? {
        return Ok(false); // a live upload
    }
    // Between open and lock the owner may have finished and renamed the
    // file into place: remove the name only if it is still this file.
    let (held, named) = (file.metadata()?, std::fs::symlink_metadata(path)?);
    if (held.dev(), held.ino()) != (named.dev(), named.ino()) {
        return Ok(false);
    }
    // Unlinked while the lock is held, so an owner that locks after this
    // sees no links left and makes another file (see `claim`).
    std::fs::remove_file(path)?;
    Ok(true)
}

/// Exclusive, non-blocking flock: true if taken, false if another open
/// file description holds it.
fn try_lock(file: &File) -> io::Result<bool> {
    loop {
        // SAFETY: flock only reads its integer arguments; the descriptor
        // belongs to `file`, which outlives the call.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_unlocked_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p(".upload-dead01.tmp"), b"abandoned").unwrap();
        std::fs::write(p(".upload-notes"), b"user's").unwrap();
        std::fs::write(p("keep.bin"), b"file").unwrap();
        std::fs::create_dir(p(".upload-dir001.tmp")).unwrap();
        std::os::unix::fs::symlink(p("keep.bin"), p(".upload-link01.tmp")).unwrap();
        let live = File::create(p(".upload-live01.tmp")).unwrap();
        assert!(claim(&live).unwrap());

        assert_eq!(remove_stale_uploads(dir.path()).unwrap(), 1);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".upload-dir001.tmp",
                ".upload-link01.tmp",
                ".upload-live01.tmp",
                ".upload-notes",
                "keep.bin"
            ]
        );
        // Once its owner is gone, the live one is abandoned too.
        drop(live);
        assert_eq!(remove_stale_uploads(dir.path()).unwrap(), 1);
        assert!(!p(".upload-live01.tmp").exists());
        assert_eq!(std::fs::read(p("keep.bin")).unwrap(), b"file");
    }

    #[test]
    fn a_file_the_cleanup_took_is_not_claimed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".upload-race01.tmp");
        let owner = File::create(&path).unwrap();
        // The cleanup wins the race: it locks and unlinks first.
        assert!(remove_if_abandoned(&path).unwrap());
        assert!(!claim(&owner).unwrap(), "an unlinked file was claimed");
        // And an owner that locked first keeps its file.
        let owner = File::create(&path).unwrap();
        assert!(claim(&owner).unwrap());
        assert!(!remove_if_abandoned(&path).unwrap());
        assert!(path.exists());
    }
}
