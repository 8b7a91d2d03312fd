//! DELETE of one file: 204, or 404 when there is no such file.

use std::path::Path;

use super::reply::io_status;
use crate::server::handlers::Response;

pub fn delete(dir: &Path, name: &str) -> Response {
    let path = dir.join(name);
    // symlink_metadata: a symlink is removed itself, never its target.
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_dir() => return Response::error(409),
        Ok(_) => {}
        Err(e) => return Response::error(io_status(&e)),
    }
    match std::fs::remove_file(&path) {
        Ok(()) => Response::new(204),
        Err(e) => Response::error(io_status(&e)),
    }
}
