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

    /// Validators of an open file, with its inode in the tag: a quick
    /// same-size replacement by rename can keep mtime (coarse kernel clock)
    /// and length, but not the inode, as both versions existed at once.
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

    /// The status answered instead of the representation, if any.
    pub fn precondition(&self, head: &RequestHead) -> Option<u16> {
        precondition(Some(self), head)
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

/// The status answered instead of carrying the request out, given the
/// target's current version (None: no file). See `Conditions::check`.
pub fn precondition(current: Option<&Validators>, head: &RequestHead) -> Option<u16> {
    // Most requests carry no `If-` field: nothing to gather or evaluate.
    if !head.has_preconditions() {
        return None;
    }
    Conditions::of(head).check(current)
}

/// A request's conditional fields, kept apart from its head so the check
/// can be repeated: an upload is checked before its body is read (a fast
/// 412) and again, under the directory's lock, right before its rename.
#[derive(Debug, Clone, Default)]
pub struct Conditions {
    /// GET or HEAD: a matching If-None-Match is 304 rather than 412, and
    /// If-Modified-Since applies.
    safe: bool,
    if_match: Option<String>,
    if_unmodified_since: Option<String>,
    if_none_match: Option<String>,
    if_modified_since: Option<String>,
}

impl Conditions {
    pub fn of(head: &RequestHead) -> Self {
        // Most requests carry no `If-` field: then none is looked up.
        let pre = head.has_preconditions();
        let field = |name| {
            pre.then(|| head.header_str(name).map(str::to_string))
                .flatten()
        };
        Conditions {
            safe: matches!(head.method, Method::Get | Method::Head),
            if_match: field("if-match"),
            if_unmodified_since: field("if-unmodified-since"),
            if_none_match: field("if-none-match"),
            if_modified_since: field("if-modified-since"),
        }
    }

    /// The status to answer instead, in RFC 9110 13.2.2's order:
    /// 1. If-Match that no current version matches (strong; `*` needs one
    ///    to exist): 412.
    /// 2. Else If-Unmodified-Since earlier than the version's time: 412.
    /// 3. If-None-Match that matches (`*`: any version): 304 for GET and
    ///    HEAD, 412 otherwise; it wins over If-Modified-Since.
    /// 4. Else, for GET and HEAD, If-Modified-Since not earlier: 304.
    ///
    /// So a PUT with `If-None-Match: *` never replaces a file, and one with
    /// `If-Match: "tag"` replaces only the version it read.
    pub fn check(&self, current: Option<&Validators>) -> Option<u16> {
        if let Some(im) = &self.if_match {
            let held = current.is_some_and(|c| {
                im.split(',')
                    .map(str::trim)
                    .any(|t| t == "*" || (t == c.etag && !t.starts_with("W/")))
            });
            if !held {
                return Some(412);
            }
        } else if let (Some(ius), Some(c)) = (&self.if_unmodified_since, current) {
            if httpdate::parse_http_date(ius).is_ok_and(|t| secs(c.mtime) > secs(t)) {
                return Some(412);
            }
        }
        if let Some(inm) = &self.if_none_match {
            let hit = current.is_some_and(|c| {
                inm.split(',')
                    .map(str::trim)
                    .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == c.etag)
            });
            return hit.then_some(if self.safe { 304 } else { 412 });
        }
        let c = current?;
        let ims = self.if_modified_since.as_deref().filter(|_| self.safe)?;
        let since = httpdate::parse_http_date(ims).ok()?;
        (secs(c.mtime) <= secs(since)).then_some(304)
    }
}
