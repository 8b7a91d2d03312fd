//! GET and HEAD of one file: validators, 304, a single byte range (206 or
//! 416), the body sent with sendfile; `?sha256` answers the digest instead.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::reply::{hex, io_status, json, FileDigest, NO_CACHE};
use crate::http::RequestHead;
use crate::server::handlers::range;
use crate::server::handlers::static_files::content_type;
use crate::server::handlers::validators::Validators;
use crate::server::handlers::{Body, Response};

/// Read size when hashing a file for `?sha256`: large enough for few
/// syscalls, fixed so memory does not grow with the file.
const DIGEST_BUF: usize = 256 * 1024;

pub fn get(dir: &Path, name: &str, head: &RequestHead) -> Response {
    let path = dir.join(name);
    let (file, meta) = match open_regular(&path) {
        Ok(fm) => fm,
        Err(status) => return Response::error(status),
    };
    let v = Validators::for_file(&meta);
    let headers = format!(
        "Content-Type: {}\r\nAccept-Ranges: bytes\r\n{NO_CACHE}{}",
        content_type(&path),
        v.header_lines()
    );
    if let Some(status) = v.precondition(head) {
        let mut r = Response::new(status);
        r.headers = headers.into();
        return r;
    }
    let body = Body::File {
        file,
        offset: 0,
        len: meta.len(),
    };
    range::respond(head, &v, headers.into(), body)
}

/// Opens a regular file without following a symlink or blocking on a FIFO;
/// validators from the descriptor match the bytes sent even if replaced.
pub(super) fn open_regular(path: &Path) -> Result<(File, Metadata), u16> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| io_status(&e))?;
    let meta = file.metadata().map_err(|e| io_status(&e))?;
    if !meta.is_file() {
        return Err(404);
    }
    Ok((file, meta))
}

/// `?sha256`: reads the whole file, so it runs as a job (see `route`).
pub fn digest(dir: &Path, name: &str) -> Response {
    let mut file = match open_regular(&dir.join(name)) {
        Ok((file, _)) => file,
        Err(status) => return Response::error(status),
    };
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; DIGEST_BUF];
    let mut read = 0u64;
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                read += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Response::error(io_status(&e)),
        }
    }
    // Files are never modified in place (uploads rename a new file over
    // the name), so what was read from this descriptor is one version.
    json(
        200,
        &FileDigest {
            name,
            size: read,
            sha256: Some(hex(&hasher.finalize())),
        },
    )
}
