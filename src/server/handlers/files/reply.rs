//! Pieces of the file service's answers (JSON, hrefs, digests, query
//! parameters, statuses for failed filesystem calls), kept in one file so
//! the handlers and the router need not import each other.

use bytes::Bytes;
use serde::Serialize;

use crate::http::RequestHead;
use crate::server::handlers::{Body, Response};

/// On every answer about the files' current state: they change under the
/// same URL, so a cache must revalidate with the ETag rather than guess
/// freshness from Last-Modified (RFC 9111 4.2.2).
pub(super) const NO_CACHE: &str = "Cache-Control: no-cache\r\n";

/// What uploads and `?sha256` answer.
#[derive(Debug, Serialize)]
pub(super) struct FileDigest<'a> {
    pub name: &'a str,
    pub size: u64,
    /// Left out of an upload's answer unless the client asked for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// A JSON response with `NO_CACHE`; serialising our structs cannot fail,
/// but if it did the answer would be a 500, not a panic.
pub(super) fn json(status: u16, value: &impl Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(mut body) => {
            body.push(b'\n');
            let mut r = Response::new(status).body(Body::Bytes(Bytes::from(body)));
            r.headers = Bytes::from(format!("Content-Type: application/json\r\n{NO_CACHE}"));
            r
        }
        Err(_) => Response::error(500),
    }
}

/// The value of `key` in a query string: Some("") for a bare `key`.
pub(super) fn query_param<'a>(head: &'a RequestHead, key: &str) -> Option<&'a str> {
    head.query()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == key).then_some(v)
    })
}

/// The request path of a file: `/files/` and the name percent-encoded
/// except for unreserved characters.
pub(super) fn href(name: &str) -> String {
    use std::fmt::Write;
    name.bytes().fold(String::from("/files/"), |mut s, b| {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            s.push(b as char);
        } else {
            let _ = write!(s, "%{b:02X}");
        }
        s
    })
}

/// Lowercase hex of a digest.
pub(super) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The status for a failed filesystem call: a full disk or quota is 507
/// (the client may retry elsewhere), everything unexpected 500.
pub(super) fn io_status(err: &std::io::Error) -> u16 {
    match err.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => 507,
        // Past the file system's (or the process's) largest file: the body
        // is too large for this server, which is what 413 says.
        Some(libc::EFBIG) => 413,
        Some(libc::EISDIR) | Some(libc::ENOTEMPTY) | Some(libc::EEXIST) => 409,
        // O_NOFOLLOW met a symlink: not a file this service serves.
        Some(libc::ELOOP) => 404,
        _ => match err.kind() {
            std::io::ErrorKind::NotFound => 404,
            std::io::ErrorKind::PermissionDenied => 403,
            _ => 500,
        },
    }
}

/// The response for a failed write, sync, lock or rename. The temporary
/// file is removed when the sink is dropped, which follows at once.
pub(super) fn write_failure(err: &std::io::Error) -> Response {
    match io_status(err) {
        // The directory vanished or a path component went away: not a
        // missing resource the client asked about.
        404 => Response::error(500),
        s => Response::error(s),
    }
}

#[cfg(test)]
mod tests {
    use super::write_failure;
    use std::io::Error;

    #[test]
    fn write_failures_map_to_statuses() {
        let status = |errno| write_failure(&Error::from_raw_os_error(errno)).status;
        assert_eq!(status(libc::ENOSPC), 507);
        assert_eq!(status(libc::EDQUOT), 507);
        assert_eq!(status(libc::EFBIG), 413);
        // The directory vanished under the upload: the server's problem,
        // not a missing resource.
        assert_eq!(status(libc::ENOENT), 500);
        assert_eq!(status(libc::EIO), 500);
    }
}
