//! Cache validators of a file (ETag, Last-Modified) and the conditional
//! request checks built on them, shared by static files and the file service.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::http::date::http_date;
use crate::http::RequestHead;

/// The validators of one version of a file.
#[derive(Debug, Clone)]
pub struct Validators {
    /// Strong ETag, quoted. Nanosecond mtime and length: a file replaced
    /// twice within one second by one of the same size still changes tag.
    pub etag: String,
    pub mtime: SystemTime,
}

impl Validators {
    pub fn new(mtime: SystemTime, len: u64) -> Self {
        let d = mtime.duration_since(UNIX_EPOCH).unwrap_or_default();
        let etag = format!("\"{:x}.{:x}-{len:x}\"", d.as_secs(), d.subsec_nanos());
        Validators { etag, mtime }
    }

    /// Validators of an open file, with its inode number in the tag: file
    /// timestamps tick with the kernel's coarse clock (milliseconds), so a
    /// file quickly replaced by rename with one of the same size can keep
    /// mtime and length, but not the inode, since the new version was
    /// created while the old one still existed.
    pub fn for_file(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        let mut v = Validators::new(meta.modified().unwrap_or(UNIX_EPOCH), meta.len());
        v.etag.insert_str(1, &format!("{:x}-", meta.ino()));
        v
    }

    /// `ETag` and `Last-Modified` header lines.
    pub fn header_lines(&self) -> String {
        format!(
            "ETag: {}\r\nLast-Modified: {}\r\n",
            self.etag,
            http_date(self.mtime)
        )
    }

    /// Whether a GET/HEAD may be answered 304. If-None-Match wins over
    /// If-Modified-Since (RFC 9110 13.2.2).
    pub fn not_modified(&self, head: &RequestHead) -> bool {
        if let Some(inm) = head.header_str("if-none-match") {
            return inm
                .split(',')
                .map(str::trim)
                .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == self.etag);
        }
        if let Some(ims) = head.header_str("if-modified-since") {
            if let Ok(since) = httpdate::parse_http_date(ims) {
                return secs(self.mtime) <= secs(since);
            }
        }
        false
    }

    /// Whether a Range header may be honoured: true without If-Range, or
    /// when If-Range names this version (strong ETag or exact date).
    pub fn if_range_holds(&self, head: &RequestHead) -> bool {
        match head.header_str("if-range").map(str::trim) {
            None => true,
            Some(v) if v.starts_with('"') => v == self.etag,
            Some(v) => httpdate::parse_http_date(v).is_ok_and(|t| secs(t) == secs(self.mtime)),
        }
    }
}

fn secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
