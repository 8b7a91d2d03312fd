//! The run's scratch space: a directory of its own (`loadlab-stress-*`)
//! inside `--scratch` or the system's temporary directory, holding the
//! spawned servers' upload directories. At the end it is removed,
//! and so are the parents of `--scratch` that the run had to create; a
//! directory that was there before is left as it was.

use std::path::{Path, PathBuf};

use anyhow::Context;
use tempfile::TempDir;

pub struct Scratch {
    dir: TempDir,
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
        let made = missing_ancestors(&parent);
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("creating scratch directory {}", parent.display()))?;
        // A directory of our own inside it: removing it never touches
        // anything else there, and two runs never share one.
        let dir = tempfile::Builder::new()
            .prefix("loadlab-stress-")
            .tempdir_in(&parent)
            .with_context(|| format!("creating scratch space in {}", parent.display()))?;
        Ok(Scratch { dir, made })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Removes the run's directory, then the created parents that are
    /// empty (`remove_dir` refuses any that are not, so nothing else that
    /// appeared there meanwhile is lost).
    pub fn close(self) -> Closed {
        let path = self.dir.path().to_path_buf();
        let error = self.dir.close().err().map(|e| e.to_string());
        for d in &self.made {
            let _ = std::fs::remove_dir(d);
        }
        Closed {
            removed: !path.exists(),
            path,
            error,
        }
    }
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
    fn a_created_parent_that_gained_other_files_is_kept() {
        let base = tempfile::tempdir().unwrap();
        let s = Scratch::create(Some(&base.path().join("new"))).unwrap();
        std::fs::write(base.path().join("new/theirs"), b"x").unwrap();
        assert!(s.close().removed);
        assert!(base.path().join("new/theirs").exists());
    }
}
