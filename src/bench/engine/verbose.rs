//! ab's -v troubleshooting lines, as ab words them: at 2 and up the
//! request sent (once) and each response head received, with a warning for
//! a status other than 2xx; at 3 and up every status code (ab's 4 adds
//! OpenSSL's traces, which rustls has no counterpart for). Off (the
//! default), the engine pays one predictable branch per read.

use std::io::Write;

/// -v's level and where its lines go.
#[derive(Debug, Clone, Copy, Default)]
pub struct Log {
    pub level: u8,
    /// stderr instead of stdout (where ab writes them).
    pub to_stderr: bool,
}

/// A response head as it arrives, until it is whole and logged.
#[derive(Debug, Default)]
pub struct HeadLog {
    bytes: Vec<u8>,
    done: bool,
}

/// Longest response head -v copies; the rest is cut (the engine's parser
/// has its own limit, this one only bounds the log's copy).
const HEAD_LOG_LIMIT: usize = 64 * 1024;

impl Log {
    /// Whether anything is logged at all.
    #[inline]
    pub fn on(&self) -> bool {
        self.level >= 2
    }

    /// One message, written whole so threads do not interleave lines.
    fn emit(&self, text: &str) {
        let _ = if self.to_stderr {
            std::io::stderr().lock().write_all(text.as_bytes())
        } else {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes()).and_then(|()| out.flush())
        };
    }

    /// ab's "INFO: GET header ==" block: the request head, once per run.
    pub fn request(&self, method: &str, request: &[u8]) {
        if !self.on() {
            return;
        }
        let head = match request.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(end) => &request[..end + 4],
            None => request,
        };
        let head = String::from_utf8_lossy(head);
        self.emit(&format!("INFO: {method} header == \n---\n{head}\n---\n"));
    }

    /// Bytes of a response as read: its head is logged once it is whole.
    pub fn response_bytes(&self, log: &mut HeadLog, bytes: &[u8]) {
        if log.done {
            return;
        }
        let room = HEAD_LOG_LIMIT.saturating_sub(log.bytes.len());
        log.bytes.extend_from_slice(&bytes[..bytes.len().min(room)]);
        let end = log.bytes.windows(4).position(|w| w == b"\r\n\r\n");
        if end.is_none() && log.bytes.len() < HEAD_LOG_LIMIT {
            return;
        }
        let head = &log.bytes[..end.map_or(log.bytes.len(), |e| e + 4)];
        let head = String::from_utf8_lossy(head);
        self.emit(&format!("LOG: header received:\n{head}\n"));
        log.done = true;
        log.bytes = Vec::new();
    }

    /// A response's status code, as ab reports it.
    pub fn status(&self, status: u16) {
        if !(200..300).contains(&status) {
            self.emit(&format!("WARNING: Response code not 2xx ({status})\n"));
        } else if self.level >= 3 {
            self.emit(&format!("LOG: Response code = {status}\n"));
        }
    }
}

impl HeadLog {
    /// Ready for the next response.
    pub fn reset(&mut self) {
        self.bytes.clear();
        self.done = false;
    }
}
