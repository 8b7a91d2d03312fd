//! Where a command's report goes: a file named by a flag, or stdout; and
//! the check, made before any work, that a named file can be written.

use std::io::Write;
use std::path::Path;

use super::values::UsageError;
use crate::bench::verdict::Verdict;

/// ab's and hey's file layouts (`-g`, `-e`, `--per-request`, `-w`) have no
/// room for a run's verdict and must stay as they are byte for byte: when
/// the verdict is not ok, one line on stderr names those files and says
/// it. ab's -S does not hide it: -S hides ab's notes on the spread of
/// its table, not whether the run can be trusted.
pub fn warn_beside(files: &[String], verdict: &Verdict) {
    if files.is_empty() || verdict.is_ok() {
        return;
    }
    eprintln!(
        "loadlab: WARNING: {} hold{} figures of a run that is {}",
        files.join(", "),
        if files.len() == 1 { "s" } else { "" },
        verdict.line()
    );
}

/// Writes `text` to `out`, or to stdout. A closed stdout (piped into
/// `head`) comes back as a BrokenPipe error, which `cli::main` treats as
/// success, instead of the panic `print!` would raise.
pub fn emit(text: &str, out: Option<&Path>) -> anyhow::Result<()> {
    match out {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display())),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            stdout.flush()?;
            Ok(())
        }
    }
}

/// Writes `text` to `path` through a temporary file in the same directory,
/// renamed over it when complete: a reader (or a full disk, or Ctrl-C)
/// never leaves a partial file under the name.
pub fn write_whole(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let fail = |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot write {}: {e}", path.display());
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| fail(&e))?;
    tmp.write_all(text.as_bytes()).map_err(|e| fail(&e))?;
    tmp.persist(path).map_err(|e| fail(&e.error))?;
    Ok(())
}

/// Refuses, before a run, an output file that could not be written after
/// it: one inside a directory that does not exist, or a path that is a
/// directory. `flag` names it in the message.
pub fn check_writable(path: &Path, flag: &str) -> Result<(), UsageError> {
    if path.is_dir() {
        return Err(UsageError(format!(
            "{flag} {} is a directory",
            path.display()
        )));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(UsageError(format!(
            "{flag} {}: no directory {}",
            path.display(),
            parent.display()
        )));
    }
    Ok(())
}

/// Whether two output paths name the same file (so one would overwrite
/// the other).
pub fn same_file(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    let canonical = |p: &Path| {
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
        let dir = parent.unwrap_or(Path::new(".")).canonicalize().ok()?;
        Some(dir.join(p.file_name()?))
    };
    matches!((canonical(a), canonical(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_checked_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(check_writable(&d.join("a.json"), "--out").is_ok());
        let e = check_writable(&d.join("nope/a.json"), "--out").unwrap_err();
        assert!(e.0.contains("no directory"), "{e}");
        let e = check_writable(d, "-e").unwrap_err();
        assert!(e.0.contains("is a directory"), "{e}");
        assert!(check_writable(Path::new("bare-name.csv"), "-e").is_ok());

        assert!(same_file(&d.join("x"), &d.join("x")));
        std::fs::create_dir(d.join("sub")).unwrap();
        assert!(same_file(&d.join("x"), &d.join("sub/../x")));
        assert!(!same_file(&d.join("x"), &d.join("y")));
    }
}
