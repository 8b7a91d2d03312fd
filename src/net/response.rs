//! The one blocking response reader in src/: a response's head first
//! (interim 1xx heads skipped), then its body streamed to the caller, both
//! framed by `http::client::ResponseParser`, so a blocking client reads a
//! response exactly as the load generator does. Timeouts belong to the
//! stream the caller passes (a socket timeout, a deadline per read).

use std::io::{self, Read};

use crate::http::client::{ResponseError, ResponseParser};

/// Bytes read from the stream at a time: large enough that streaming a
/// big body costs few system calls.
const READ_BUF: usize = 256 * 1024;

/// A final response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    /// Body bytes that follow; None when the body is chunked or ends
    /// when the connection closes. 0 for 204, 304 and answers to HEAD.
    pub body_length: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("{0}")]
    Malformed(#[from] ResponseError),
    #[error("connection closed before a response")]
    Closed,
    #[error("body ended {0} bytes early")]
    ShortBody(u64),
}

/// Reads one response from a blocking stream.
pub struct ResponseReader {
    parser: ResponseParser,
    buf: Vec<u8>,
    /// `buf[start..end]` is read but not yet parsed.
    start: usize,
    end: usize,
    /// The response has ended (a bodiless one at its head).
    done: bool,
}

impl ResponseReader {
    /// `head_request`: the request was HEAD, so no body follows.
    pub fn new(head_request: bool) -> ResponseReader {
        let mut parser = ResponseParser::new(head_request);
        parser.pause_after_head(true);
        ResponseReader {
            parser,
            buf: vec![0; READ_BUF],
            start: 0,
            end: 0,
            done: false,
        }
    }

    /// Reads until the final head is in; bytes of the body that came with
    /// it wait for `read_body`.
    pub fn read_head(&mut self, from: &mut impl Read) -> Result<ResponseHead, ReadError> {
        loop {
            if self.start < self.end {
                let (n, done) = self.parser.feed(&self.buf[self.start..self.end])?;
                self.start += n;
                if let Some(info) = done {
                    self.done = true;
                    return Ok(ResponseHead {
                        status: info.status,
                        body_length: Some(0),
                    });
                }
                if let Some((status, body_length)) = self.parser.in_body() {
                    return Ok(ResponseHead {
                        status,
                        body_length,
                    });
                }
            }
            // Only a body can end at a close, and none has begun.
            if self.fill(from)? == 0 {
                return Err(ReadError::Closed);
            }
        }
    }

    /// Streams the rest of the body into `f` (after `read_head`); returns
    /// its length.
    pub fn read_body(
        &mut self,
        from: &mut impl Read,
        mut f: impl FnMut(&[u8]),
    ) -> Result<u64, ReadError> {
        let mut got = 0u64;
        while !self.done {
            if self.start < self.end {
                let input = &self.buf[self.start..self.end];
                let (n, done) = self.parser.feed_with(input, |b| {
                    got += b.len() as u64;
                    f(b)
                })?;
                self.start += n;
                self.done = done.is_some();
                continue;
            }
            if self.fill(from)? == 0 {
                let left = self.parser.in_body().and_then(|(_, left)| left);
                match self.parser.feed_eof() {
                    Ok(_) => self.done = true,
                    Err(e) => {
                        return Err(left.map_or(ReadError::Malformed(e), ReadError::ShortBody))
                    }
                }
            }
        }
        Ok(got)
    }

    /// Reads more into the empty buffer; 0 at the end of the stream.
    fn fill(&mut self, from: &mut impl Read) -> Result<usize, ReadError> {
        loop {
            match from.read(&mut self.buf) {
                Ok(n) => {
                    (self.start, self.end) = (0, n);
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream that hands out at most `step` bytes per read.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn read_all(
        bytes: &[u8],
        step: usize,
        head: bool,
    ) -> Result<(ResponseHead, Vec<u8>), ReadError> {
        let mut s = Trickle { data: bytes, step };
        let mut r = ResponseReader::new(head);
        let h = r.read_head(&mut s)?;
        let mut body = Vec::new();
        let n = r.read_body(&mut s, |b| body.extend_from_slice(b))?;
        assert_eq!(n, body.len() as u64);
        Ok((h, body))
    }

    #[test]
    fn reads_every_framing_whole_and_bytewise() {
        // (wire bytes, status, body length in the head, body)
        type Case = (&'static [u8], u16, Option<u64>, &'static [u8]);
        let cases: [Case; 4] = [
            (
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nhello",
                201,
                Some(5),
                b"hello",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                200,
                None,
                b"abc",
            ),
            (b"HTTP/1.0 200 OK\r\n\r\nuntil close", 200, None, b"until close"),
            (b"HTTP/1.1 204 No Content\r\n\r\n", 204, Some(0), b""),
        ];
        for (bytes, status, len, body) in cases {
            for step in [bytes.len(), 1, 4] {
                let (h, got) = read_all(bytes, step, false).unwrap();
                assert_eq!((h.status, h.body_length), (status, len), "step {step}");
                assert_eq!(got, body, "step {step}");
            }
        }
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n";
        assert_eq!(read_all(head, 3, true).unwrap().0.body_length, Some(0));
    }

    #[test]
    fn a_cut_response_is_an_error_that_says_where() {
        let e = read_all(b"", 10, false).unwrap_err();
        assert_eq!(e.to_string(), "connection closed before a response");
        let e = read_all(b"HTTP/1.1 200 OK\r\nContent-Le", 10, false).unwrap_err();
        assert!(matches!(e, ReadError::Closed), "{e}");
        let e = read_all(
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc",
            10,
            false,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "body ended 6 bytes early");
        let e = read_all(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
            2,
            false,
        )
        .unwrap_err();
        assert!(
            matches!(e, ReadError::Malformed(ResponseError::Incomplete)),
            "{e}"
        );
        let e = read_all(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", 100, false).unwrap_err();
        assert!(
            matches!(e, ReadError::Malformed(ResponseError::BadHead)),
            "{e}"
        );
    }
}
