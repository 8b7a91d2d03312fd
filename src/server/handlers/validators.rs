//! Cache validators of a file (ETag, Last-Modified) and the conditional
//! request checks built on them, shared by static files and the file service.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::http::date::http_date;
use crate::http::{Method, RequestHead};

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

    /// The status a conditional request is answered with instead of the
    /// representation, if any (RFC 9110 13.2.2): a matching If-None-Match
    /// is 304 for GET and HEAD and 412 for any other method, and wins over
    /// If-Modified-Since, which only GET and HEAD evaluate.
    pub fn precondition(&self, head: &RequestHead) -> Option<u16> {
        let safe = matches!(head.method, Method::Get | Method::Head);
        if let Some(inm) = head.header_str("if-none-match") {
            let hit = inm
                .split(',')
                .map(str::trim)
                .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == self.etag);
            return hit.then_some(if safe { 304 } else { 412 });
        }
        let ims = head.header_str("if-modified-since").filter(|_| safe)?;
        let since = httpdate::parse_http_date(ims).ok()?;
        (secs(self.mtime) <= secs(since)).then_some(304)
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
