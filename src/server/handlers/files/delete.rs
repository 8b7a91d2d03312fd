//! DELETE of one file: 204, 404 when there is no such file, or 412 when
//! the request's preconditions do not hold at the moment of the unlink.

use std::path::Path;

use super::commit;
use super::reply::io_status;
use crate::server::handlers::validators::Conditions;
use crate::server::handlers::Response;

pub fn delete(dir: &Path, name: &str, conditions: &Conditions) -> Response {
    let path = dir.join(name);
    // Held until the unlink is done: an upload cannot replace the version
    // the conditions were checked against in between.
    let _held = match commit::hold(dir, name, conditions) {
        Ok(held) => held,
        Err(refused) => return refused,
    };
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
