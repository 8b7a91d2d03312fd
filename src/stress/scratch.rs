//! The run's scratch space: a directory of its own (`loadlab-stress-*`)
//! inside `--scratch` or the system's temporary directory, holding the
//! spawned servers' upload directories. At the end it is removed,
//! and so are the parents of `--scratch` that the run had to create; a
//! directory that was there before is left as it was.

use std::path::{Path, PathBuf};

use anyhow::Context;
use tempfile::TempDir;

pub struct Scratch {
    /// None once closed.
    dir: Option<TempDir>,
    /// Directories created to reach `--scratch`, deepest first.
    made: Vec<PathBuf>,
}

/// What became of the scratch space.
pub struct Closed {
    pub path: PathBuf,
    pub removed: bool,
    /// Why removing it failed, if it did.
    pub error: Option<String>,
}

impl Scratch {
    /// Makes the run's directory inside `parent` (default: $TMPDIR),
    /// creating `parent` if needed.
    pub fn create(parent: Option<&Path>) -> anyhow::Result<Scratch> {
        let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
        // From here on, dropping `scratch` removes what was made, on every
        // way out (an error below, a panic, an early return).
        let mut scratch = Scratch {
            dir: None,
            made: missing_ancestors(&parent),
        };
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("creating scratch directory {}", parent.display()))?;
        // A directory of our own inside it: removing it never touches
        // anything else there, and two runs never share one.
        let dir = tempfile::Builder::new()
            .prefix("loadlab-stress-")
            .tempdir_in(&parent)
            .with_context(|| format!("creating scratch space in {}", parent.display()))?;
        scratch.dir = Some(dir);
        Ok(scratch)
    }

    pub fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), TempDir::path)
    }

    /// Removes the run's directory, then the created parents that are
    /// empty (`remove_dir` refuses any that are not, so nothing else that
    /// appeared there meanwhile is lost).
    pub fn close(mut self) -> Closed {
        let path = self.path().to_path_buf();
        let error = self.remove();
        Closed {
            removed: !path.exists(),
            path,
            error,
        }
    }

    fn remove(&mut self) -> Option<String> {
        let error = self.dir.take().and_then(|d| d.close().err());
        for d in std::mem::take(&mut self.made) {
            let _ = std::fs::remove_dir(d);
        }
        error.map(|e| e.to_string())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Refuses, before anything is written, a run whose files would not fit:
/// `need` bytes must be free where the scratch space goes (`parent`, or
/// its nearest existing ancestor; default: $TMPDIR). The error is one line.
pub fn check_room(parent: Option<&Path>, need: u64) -> Result<(), String> {
    let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
    let Some(existing) = parent.ancestors().find(|a| a.is_dir()) else {
        // A relative path whose every part is missing: the working
        // directory holds it.
        return check_room(Some(Path::new(".")), need);
    };
    let st = nix::sys::statvfs::statvfs(existing)
        .map_err(|e| format!("cannot tell the free space in {}: {e}", existing.display()))?;
    // Blocks an unprivileged user may fill, as df's "Avail".
    let free = (st.blocks_available() as u64).saturating_mul(st.fragment_size() as u64);
    if free < need {
        let gib = |n: u64| n as f64 / (1u64 << 30) as f64;
        return Err(format!(
            "needs {:.1} GiB free for the largest cell's files in {}, which has {:.1} GiB",
            gib(need),
            existing.display(),
            gib(free)
        ));
    }
    Ok(())
}

/// `dir` and those of its ancestors that do not exist, deepest first.
fn missing_ancestors(dir: &Path) -> Vec<PathBuf> {
    dir.ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
        .map(Path::to_path_buf)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_parents_go_and_existing_ones_stay() {
        let base = tempfile::tempdir().unwrap();
        let keep = base.path().join("kept");
        std::fs::create_dir(&keep).unwrap();
        let s = Scratch::create(Some(&keep.join("a/b"))).unwrap();
        assert!(s.path().starts_with(keep.join("a/b")));
        std::fs::write(s.path().join("log"), b"x").unwrap();
        let closed = s.close();
        assert!(closed.removed && closed.error.is_none());
        assert!(!keep.join("a").exists());
        assert!(keep.is_dir());
    }

    #[test]
    fn regression_a_scratch_space_dropped_unclosed_left_the_parents_it_made() {
        // An error or a panic between create and close drops it: what it
        // made goes all the same.
        let base = tempfile::tempdir().unwrap();
        let s = Scratch::create(Some(&base.path().join("a/nested/path"))).unwrap();
        let inner = s.path().to_path_buf();
        std::fs::write(inner.join("upload"), b"x").unwrap();
        drop(s);
        assert!(!inner.exists());
        assert!(!base.path().join("a").exists());
        assert!(base.path().is_dir());
    }

    #[test]
    fn room_is_measured_where_the_scratch_space_would_go() {
        let base = tempfile::tempdir().unwrap();
        let deep = base.path().join("not/made/yet");
        assert_eq!(check_room(Some(&deep), 1), Ok(()));
        let e = check_room(Some(&deep), u64::MAX).unwrap_err();
        assert!(e.starts_with("needs "), "{e}");
        assert!(e.contains(&base.path().display().to_string()), "{e}");
        assert!(!base.path().join("not").exists());
    }

    #[test]
    fn a_created_parent_that_gained_other_files_is_kept() {
        let base = tempfile::tempdir().unwrap();
        let s = Scratch::create(Some(&base.path().join("new"))).unwrap();
        std::fs::write(base.path().join("new/theirs"), b"x").unwrap();
        assert!(s.close().removed);
        assert!(base.path().join("new/theirs").exists());
    }
}
