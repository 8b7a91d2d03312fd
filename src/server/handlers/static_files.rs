//! Static files from the embedded docroot or a directory: validators,
//! conditional requests, single ranges, small files cached in memory, large
//! ones sent with sendfile; a directory serves its index.html at `dir/`.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::validators::Validators;

use bytes::Bytes;

use super::docroot::EMBEDDED_FILES;
use super::path::path_key;
use super::range;
use super::response::{Body, Response};
use crate::http::RequestHead;

/// Files up to this size are kept in memory and sent with the head in one
/// write; larger ones are opened per request and sent with sendfile.
const CACHE_FILE_MAX: u64 = 64 * 1024;
/// How long a cached file is trusted before its metadata is checked again:
/// a stat per request is a syscall the hot path does not need.
const REVALIDATE_AFTER: Duration = Duration::from_secs(1);
/// Bound on cached entries so a crawl of many paths cannot grow memory.
const CACHE_ENTRIES_MAX: usize = 4096;

/// A file ready to serve: validators and pre-encoded headers.
#[derive(Debug)]
pub struct Entry {
    validators: Validators,
    /// Content-Type, ETag and Last-Modified lines.
    headers: Bytes,
    /// Content for small files; None means open `path` and sendfile.
    content: Option<Bytes>,
    path: PathBuf,
    len: u64,
    checked: Instant,
    /// Served as a directory's index.html: its URL ends with a slash.
    dir_index: bool,
}

#[derive(Debug)]
pub enum StaticRoot {
    /// A handful of files, found by comparing names: cheaper than hashing.
    Embedded(Vec<(&'static str, Entry)>),
    Dir {
        root: PathBuf,
        cache: RwLock<HashMap<String, Arc<Entry>>>,
    },
}

impl StaticRoot {
    pub fn new(root: Option<PathBuf>) -> anyhow::Result<StaticRoot> {
        let Some(root) = root else {
            let start = SystemTime::now();
            let map = EMBEDDED_FILES
                .iter()
                .map(|(name, content)| {
                    let mut e = entry_for(PathBuf::from(name), content.len() as u64, start);
                    e.content = Some(Bytes::from_static(content));
                    // Static like the content, so a response's copy of the
                    // headers is not refcounted; leaked once per embedded
                    // file, which is served until exit anyway.
                    e.headers = Bytes::from_static(e.headers.to_vec().leak());
                    (*name, e)
                })
                .collect();
            return Ok(StaticRoot::Embedded(map));
        };
        let root = fs::canonicalize(&root)
            .map_err(|e| anyhow::anyhow!("--root {}: {e}", root.display()))?;
        if !root.is_dir() {
            anyhow::bail!("--root {}: not a directory", root.display());
        }
        Ok(StaticRoot::Dir {
            root,
            cache: RwLock::new(HashMap::new()),
        })
    }

    /// The directory files are served from, if not embedded.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            StaticRoot::Dir { root, .. } => Some(root),
            StaticRoot::Embedded(_) => None,
        }
    }

    /// Answers GET, HEAD (and POST, served like GET) for a path.
    pub fn serve(&self, head: &RequestHead, raw_path: &str) -> Response {
        if let StaticRoot::Embedded(files) = self {
            // `/name` of an embedded file already is its key (the names
            // hold no `%`, `/` or dot segment): skip the decode.
            let exact = raw_path.strip_prefix('/').filter(|n| !n.is_empty());
            if let Some(e) = exact.and_then(|n| find_embedded(files, n)) {
                return respond(head, e);
            }
        }
        let Ok(key) = path_key(raw_path) else {
            return Response::error(400);
        };
        let held;
        let (entry, dir_index) = match self {
            StaticRoot::Embedded(files) => {
                // The root is the one directory: `/` is its index, while
                // `/index.html` names the file.
                let name = if key.is_empty() { "index.html" } else { &key };
                match find_embedded(files, name) {
                    Some(e) => (e, key.is_empty()),
                    None => return Response::error(404),
                }
            }
            StaticRoot::Dir { root, cache } => {
                let cached = cache.read().ok().and_then(|c| c.get(&*key).cloned());
                let e = match cached {
                    Some(e) if e.checked.elapsed() < REVALIDATE_AFTER => e,
                    _ => match lookup(root, &key) {
                        Ok(e) => {
                            let e = Arc::new(e);
                            if let Ok(mut c) = cache.write() {
                                if c.len() >= CACHE_ENTRIES_MAX {
                                    c.clear();
                                }
                                c.insert(key.into_owned(), Arc::clone(&e));
                            }
                            e
                        }
                        Err(status) => return Response::error(status),
                    },
                };
                held = e;
                (&*held, held.dir_index)
            }
        };
        // Relative names in a directory's index resolve against its URL,
        // so it must end with a slash; a file's must not.
        match (dir_index, raw_path.ends_with('/')) {
            (true, false) => redirect_to_dir(head, raw_path),
            (false, true) => Response::error(404),
            _ => respond(head, entry),
        }
    }
}

/// The embedded file named `name` (a key: no leading slash).
fn find_embedded<'a>(files: &'a [(&'static str, Entry)], name: &str) -> Option<&'a Entry> {
    files.iter().find(|(n, _)| *n == name).map(|(_, e)| e)
}

/// 301 to a directory's URL with the slash it lacks, query kept.
fn redirect_to_dir(head: &RequestHead, raw_path: &str) -> Response {
    // One leading slash: `//host/dir` would be read as another host.
    let mut location = format!("/{}/", raw_path.trim_start_matches('/'));
    if let Some(q) = head.query() {
        location.push('?');
        location.push_str(q);
    }
    Response::error(301).header("Location", &location)
}

fn respond(head: &RequestHead, e: &Entry) -> Response {
    match e.validators.precondition(head) {
        Some(304) => {
            return Response {
                status: 304,
                headers: e.headers.clone(),
                body: Body::Empty,
                close: false,
            }
        }
        Some(status) => return Response::error(status),
        None => {}
    }
    let body = match &e.content {
        Some(b) => Body::Bytes(b.clone()),
        None => match File::open(&e.path) {
            Ok(file) => Body::File {
                file,
                offset: 0,
                len: e.len,
            },
            Err(err) => return Response::error(status_for(&err)),
        },
    };
    range::respond(head, &e.validators, e.headers.clone(), body)
}

pub(super) fn status_for(err: &io::Error) -> u16 {
    match err.kind() {
        io::ErrorKind::NotFound => 404,
        io::ErrorKind::PermissionDenied => 403,
        _ if err.raw_os_error() == Some(libc::ENOTDIR) => 404,
        // A name longer than the filesystem allows names no file: the
        // client's mistake, not a server error.
        _ if err.raw_os_error() == Some(libc::ENAMETOOLONG) => 404,
        _ => 500,
    }
}

/// Resolves a `path_key` under the root, refusing anything whose real path
/// (symlinks followed) is outside it.
fn lookup(root: &Path, key: &str) -> Result<Entry, u16> {
    let mut path = root.to_path_buf();
    path.extend(key.split('/').filter(|s| !s.is_empty()));
    let mut real = fs::canonicalize(&path).map_err(|e| status_for(&e))?;
    if !real.starts_with(root) {
        return Err(403);
    }
    let mut meta = fs::metadata(&real).map_err(|e| status_for(&e))?;
    let dir_index = meta.is_dir();
    if dir_index {
        real.push("index.html");
        meta = fs::metadata(&real).map_err(|e| status_for(&e))?;
    }
    if !meta.is_file() {
        return Err(404);
    }
    let mtime = meta.modified().unwrap_or(UNIX_EPOCH);
    let mut e = entry_for(real, meta.len(), mtime);
    e.dir_index = dir_index;
    if meta.len() <= CACHE_FILE_MAX {
        e.content = Some(Bytes::from(fs::read(&e.path).map_err(|e| status_for(&e))?));
        e.len = e.content.as_ref().map_or(0, |c| c.len() as u64);
    }
    Ok(e)
}

fn entry_for(path: PathBuf, len: u64, mtime: SystemTime) -> Entry {
    let validators = Validators::new(mtime, len);
    let headers = format!(
        "Content-Type: {}\r\nAccept-Ranges: bytes\r\n{}",
        content_type(&path),
        validators.header_lines()
    );
    Entry {
        validators,
        headers: Bytes::from(headers),
        content: None,
        path,
        len,
        checked: Instant::now(),
        dir_index: false,
    }
}

pub fn content_type(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("txt") => "text/plain; charset=utf-8",
        Some("css") => "text/css",
        Some("js" | "mjs") => "text/javascript",
        Some("json") => "application/json",
        Some("xml") => "application/xml",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("ico") => "image/x-icon",
        Some("wasm") => "application/wasm",
        Some("pdf") => "application/pdf",
        Some("csv") => "text/csv",
        Some("woff2") => "font/woff2",
        Some("mp4") => "video/mp4",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `serve` answers a path of `/` and an embedded name without
    /// decoding it: that is right only while every name is its own key.
    #[test]
    fn embedded_names_are_their_own_keys() {
        for (name, _) in EMBEDDED_FILES {
            assert!(!name.is_empty() && !name.ends_with('/'), "{name:?}");
            assert_eq!(path_key(&format!("/{name}")).unwrap(), name);
        }
    }
}
