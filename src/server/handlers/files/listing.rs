//! `GET /files/`: the directory as JSON, sorted by name, size or mtime.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::Serialize;

use super::name;
use super::reply::{io_status, json, query_param};
use crate::http::RequestHead;
use crate::server::handlers::{Action, Response};
use crate::sys::time as rfc3339;

/// Most entries one listing returns: the answer is built in memory, so it
/// needs a bound; `truncated` tells the client there were more.
pub const MAX_LISTING: usize = 100_000;

#[derive(Debug, Serialize)]
struct Entry {
    name: String,
    size: u64,
    /// RFC 3339, UTC, milliseconds.
    modified: String,
    modified_ms: i64,
}

#[derive(Debug, Serialize)]
struct Listing {
    files: Vec<Entry>,
    truncated: bool,
}

#[derive(Clone, Copy)]
enum Sort {
    Name,
    Size,
    Mtime,
}

/// Checks the query at once; reading the directory (a stat per entry, up
/// to MAX_LISTING of them) is a job, run off an event loop's thread.
pub fn list(dir: &Path, head: &RequestHead) -> Action {
    let bad = |msg| Action::Respond(Response::text(400, msg));
    let sort = match query_param(head, "sort") {
        None | Some("name") => Sort::Name,
        Some("size") => Sort::Size,
        Some("mtime") => Sort::Mtime,
        Some(_) => return bad("400 Bad Request: sort must be name, size or mtime"),
    };
    let desc = match query_param(head, "order") {
        None | Some("asc") => false,
        Some("desc") => true,
        Some(_) => return bad("400 Bad Request: order must be asc or desc"),
    };
    let dir: PathBuf = dir.to_path_buf();
    Action::Defer(Box::new(move || read(&dir, sort, desc)))
}

fn read(dir: &Path, sort: Sort, desc: bool) -> Response {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => return Response::error(io_status(&e)),
    };
    let mut files = Vec::new();
    let mut truncated = false;
    for entry in rd.flatten() {
        // Only regular files with names the API could address: this hides
        // temporary uploads, dot files, symlinks and directories.
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name::check(&name).is_err() || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let Ok(meta) = entry.metadata() else {
            continue; // removed since read_dir saw it
        };
        if files.len() == MAX_LISTING {
            truncated = true;
            break;
        }
        let mtime = meta.modified().unwrap_or(UNIX_EPOCH);
        files.push(Entry {
            name,
            size: meta.len(),
            modified: rfc3339::format(mtime),
            modified_ms: rfc3339::epoch_ms(mtime),
        });
    }
    match sort {
        Sort::Name => files.sort_by(|a, b| a.name.cmp(&b.name)),
        Sort::Size => files.sort_by(|a, b| a.size.cmp(&b.size).then(a.name.cmp(&b.name))),
        Sort::Mtime => {
            files.sort_by(|a, b| a.modified_ms.cmp(&b.modified_ms).then(a.name.cmp(&b.name)))
        }
    }
    if desc {
        files.reverse();
    }
    json(200, &Listing { files, truncated })
}
