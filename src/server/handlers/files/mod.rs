//! The file service under `/files/`: list, upload, download (with ranges),
//! digest (`?sha256`) and delete, confined to one directory. Uploads are
//! renamed into place, so a reader never sees a partial file.

mod commit;
mod delete;
mod digest;
mod download;
mod listing;
pub mod name;
mod reply;
mod repr_digest;

pub mod stale;
mod upload;

use std::path::{Path, PathBuf};

use super::app::App;
use super::response::{Action, Response};
use super::validators::Conditions;
use crate::http::{Method, RequestHead};

pub use super::app::DEFAULT_MAX_UPLOAD;
pub use crate::results::files::TEMP_PREFIX;

/// Routes `/files`, `/files/` and `/files/NAME`; None for other paths.
pub fn route(app: &App, head: &RequestHead, path: &str) -> Option<Action> {
    let dir = app.files_dir.as_deref()?;
    let rest = path.strip_prefix("/files")?;
    let raw_name = match rest {
        "" | "/" => return Some(collection(dir, head)),
        r => r.strip_prefix('/')?,
    };
    let name = match name::parse(raw_name) {
        Ok(n) => n,
        Err(e) => {
            return Some(Action::Respond(Response::text(
                400,
                &format!("400 Bad Request: {e}"),
            )))
        }
    };
    let conditions = Conditions::of(head);
    if matches!(head.method, Method::Put | Method::Post | Method::Delete) {
        if let Some(refused) = refuse_change(dir, &name, head, &conditions) {
            return Some(Action::Respond(refused));
        }
    }
    // Work that may wait on the disk is a job, run off the event loops.
    let owned = || (dir.to_path_buf(), name.clone());
    Some(match head.method {
        Method::Get | Method::Head if reply::query_param(head, "sha256").is_some() => {
            let (dir, name) = owned();
            Action::Defer(Box::new(move || download::digest(&dir, &name)))
        }
        Method::Get | Method::Head => Action::Respond(download::get(dir, &name, head)),
        Method::Put | Method::Post => Action::ReadBody(Box::new(upload::Upload::new(
            dir,
            name,
            app.max_upload,
            conditions,
            repr_digest::wants_sha256(head),
            app.may_block,
        ))),
        Method::Delete => {
            let (dir, name) = owned();
            Action::Defer(Box::new(move || delete::delete(&dir, &name, &conditions)))
        }
        m => Action::Respond(Response::not_allowed(m, "GET, HEAD, PUT, POST, DELETE")),
    })
}

/// Refuses an upload or delete before its body is read: a partial PUT (400,
/// RFC 9110 14.5: only whole files are stored) or a failed precondition
/// (412). This only saves a doomed body; `commit` repeats it under lock.
fn refuse_change(
    dir: &Path,
    name: &str,
    head: &RequestHead,
    conditions: &Conditions,
) -> Option<Response> {
    if head.header_str("content-range").is_some() {
        return Some(Response::text(
            400,
            "400 Bad Request: Content-Range on an upload (only whole files are stored)",
        ));
    }
    conditions
        .check(commit::current(dir, name).as_ref())
        .map(Response::error)
}

fn collection(dir: &Path, head: &RequestHead) -> Action {
    match head.method {
        Method::Get | Method::Head => listing::list(dir, head),
        m => Action::Respond(Response::not_allowed(m, "GET, HEAD")),
    }
}

/// Resolves the upload directory: the one given (created if missing), else
/// `loadlab/files` under the user's data (or the temporary) directory, then
/// clears what a killed server left (`stale`) before any worker exists.
pub fn resolve_dir(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let dir = create_dir(given)?;
    if let Err(e) = stale::remove_stale_uploads(&dir) {
        // Leftovers are hidden and harmless: not a reason to refuse to start.
        eprintln!(
            "loadlab: cannot clear old temporary uploads in {}: {e}",
            dir.display()
        );
    }
    Ok(dir)
}

fn create_dir(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let explicit = given.is_some();
    let dir = given.unwrap_or_else(default_dir);
    let made = std::fs::create_dir_all(&dir).and_then(|_| std::fs::canonicalize(&dir));
    match made {
        Ok(d) if d.is_dir() => Ok(d),
        Ok(d) => anyhow::bail!("--files {}: not a directory", d.display()),
        Err(e) if explicit => anyhow::bail!("--files {}: {e}", dir.display()),
        Err(_) => {
            let fallback = std::env::temp_dir().join("loadlab-files");
            std::fs::create_dir_all(&fallback)?;
            Ok(std::fs::canonicalize(fallback)?)
        }
    }
}

fn default_dir() -> PathBuf {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local/share"))
        })
        .unwrap_or_else(std::env::temp_dir);
    data.join("loadlab").join("files")
}

#[cfg(test)]
mod tests {
    use super::reply::io_status;
    use std::io::{Error, ErrorKind};

    #[test]
    fn io_errors_map_to_statuses() {
        for (errno, status) in [
            (libc::ENOSPC, 507),
            (libc::EDQUOT, 507),
            (libc::EFBIG, 413),
            (libc::EISDIR, 409),
            (libc::ENOTEMPTY, 409),
            (libc::EEXIST, 409),
            (libc::ELOOP, 404),
            (libc::ENOENT, 404),
            (libc::EACCES, 403),
            (libc::EPERM, 403),
            (libc::EIO, 500),
            (libc::EROFS, 500),
            (libc::EMFILE, 500),
        ] {
            let e = Error::from_raw_os_error(errno);
            assert_eq!(io_status(&e), status, "{e}");
        }
        // Errors without an errno go by their kind.
        assert_eq!(io_status(&Error::new(ErrorKind::NotFound, "x")), 404);
        assert_eq!(
            io_status(&Error::new(ErrorKind::PermissionDenied, "x")),
            403
        );
        assert_eq!(io_status(&Error::other("x")), 500);
    }
}
