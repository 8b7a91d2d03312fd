//! Writing a results file whole: through a hidden temporary file and a
//! rename, so a reader (a browser reloading a report, a script polling
//! sweep.json) never sees half a file, and a failed write leaves neither
//! half a file nor the temporary one behind.

use std::path::{Path, PathBuf};

/// Writes `bytes` to `dir/name` whole; returns the path written.
pub fn write_whole(dir: &Path, name: &str, bytes: &[u8]) -> anyhow::Result<PathBuf> {
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            // Never leave the half-made copy beside the results.
            let _ = std::fs::remove_file(&tmp);
            anyhow::anyhow!("cannot write {}: {e}", path.display())
        })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::write_whole;

    #[test]
    fn a_failed_rename_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // A non-empty directory where the file goes: the rename fails.
        std::fs::create_dir_all(dir.path().join("sweep.json/x")).unwrap();
        let err = write_whole(dir.path(), "sweep.json", b"{}").unwrap_err();
        assert!(err.to_string().contains("cannot write"), "{err}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["sweep.json"], "left behind: {names:?}");
        // And a good write replaces the file in one step.
        let ok = tempfile::tempdir().unwrap();
        write_whole(ok.path(), "a.txt", b"one").unwrap();
        write_whole(ok.path(), "a.txt", b"two").unwrap();
        assert_eq!(std::fs::read(ok.path().join("a.txt")).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(ok.path()).unwrap().count(), 1);
    }
}
