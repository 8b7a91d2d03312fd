//! Incremental decoder for the chunked transfer coding (RFC 9112 section 7.1).

use super::error::ProtoError;
use super::limits::{MAX_CHUNK_LINE, MAX_TRAILER_BYTES};

/// What one step of decoding found at the front of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkStep {
    /// This many bytes of framing were consumed; call again.
    Framing(usize),
    /// The first this-many bytes of the input are body data.
    Data(usize),
    /// The body ended; this many bytes (last framing and trailers) consumed.
    Done(usize),
    /// More input is needed to make progress.
    NeedData,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Size,
    Data(u64),
    DataEnd,
    Trailers,
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkedDecoder {
    state: State,
    trailer_bytes: usize,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        ChunkedDecoder {
            state: State::Size,
            trailer_bytes: 0,
        }
    }
}

const BAD_SIZE: ProtoError = ProtoError::bad_request("invalid chunk size");

impl ChunkedDecoder {
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Bytes of the current chunk not yet returned as data: known as soon as
    /// the chunk's size line is read, so a body limit can refuse the chunk
    /// before any of it is delivered.
    pub fn chunk_remaining(&self) -> u64 {
        match self.state {
            State::Data(n) => n,
            _ => 0,
        }
    }

    /// Decodes from the front of `input`, which starts where the last step
    /// ended. Never consumes past the end of the body.
    pub fn step(&mut self, input: &[u8]) -> Result<ChunkStep, ProtoError> {
        match self.state {
            State::Size => {
                let Some(eol) = find_line(input, MAX_CHUNK_LINE) else {
                    if input.len() >= MAX_CHUNK_LINE {
                        return Err(ProtoError::bad_request("chunk size line too long"));
                    }
                    return Ok(ChunkStep::NeedData);
                };
                let line = strip_cr(&input[..eol])?;
                let size = parse_size_line(line)?;
                self.state = if size == 0 {
                    State::Trailers
                } else {
                    State::Data(size)
                };
                Ok(ChunkStep::Framing(eol + 1))
            }
            State::Data(remaining) => {
                if input.is_empty() {
                    return Ok(ChunkStep::NeedData);
                }
                let n = remaining.min(input.len() as u64);
                let left = remaining - n;
                self.state = if left == 0 {
                    State::DataEnd
                } else {
                    State::Data(left)
                };
                Ok(ChunkStep::Data(n as usize))
            }
            State::DataEnd => match input {
                [b'\r', b'\n', ..] => {
                    self.state = State::Size;
                    Ok(ChunkStep::Framing(2))
                }
                [] | [b'\r'] => Ok(ChunkStep::NeedData),
                _ => Err(ProtoError::bad_request("missing CRLF after chunk data")),
            },
            State::Trailers => {
                let room = MAX_TRAILER_BYTES - self.trailer_bytes;
                let Some(eol) = find_line(input, room) else {
                    if input.len() >= room {
                        return Err(ProtoError::new(431, "trailer section too large"));
                    }
                    return Ok(ChunkStep::NeedData);
                };
                let line = strip_cr(&input[..eol])?;
                if line.is_empty() {
                    self.state = State::Done;
                    return Ok(ChunkStep::Done(eol + 1));
                }
                check_trailer_field(line)?;
                self.trailer_bytes += eol + 1;
                Ok(ChunkStep::Framing(eol + 1))
            }
            State::Done => Ok(ChunkStep::Done(0)),
        }
    }
}

/// Index of the first LF within the first `max` bytes.
fn find_line(input: &[u8], max: usize) -> Option<usize> {
    input[..input.len().min(max)]
        .iter()
        .position(|&b| b == b'\n')
}

/// Chunked framing lines must end in CRLF; a bare LF is a framing error.
fn strip_cr(line: &[u8]) -> Result<&[u8], ProtoError> {
    match line.split_last() {
        Some((b'\r', rest)) => Ok(rest),
        _ => Err(ProtoError::bad_request("chunk line not terminated by CRLF")),
    }
}

/// `chunk-size [ chunk-ext ]`: hex digits, then optional `;name[=value]`
/// extensions, which are checked for shape and ignored.
fn parse_size_line(line: &[u8]) -> Result<u64, ProtoError> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return Err(BAD_SIZE);
    }
    let mut size: u64 = 0;
    for &b in &line[..digits] {
        let v = (b as char).to_digit(16).unwrap_or(0) as u64;
        size = size
            .checked_mul(16)
            .and_then(|s| s.checked_add(v))
            .ok_or(ProtoError::bad_request("chunk size overflows"))?;
    }
    let rest = &line[digits..];
    let ext_start = rest.iter().position(|&b| b != b' ' && b != b'\t');
    match ext_start {
        None => Ok(size),
        Some(i) if rest[i] == b';' => {
            if rest[i..]
                .iter()
                .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b) || b >= 0x80)
            {
                Ok(size)
            } else {
                Err(ProtoError::bad_request("invalid chunk extension"))
            }
        }
        Some(_) => Err(BAD_SIZE),
    }
}

fn check_trailer_field(line: &[u8]) -> Result<(), ProtoError> {
    let bad = ProtoError::bad_request("invalid trailer field");
    let colon = line.iter().position(|&b| b == b':').ok_or(bad)?;
    let name = &line[..colon];
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
        return Err(bad);
    }
    if line[colon + 1..]
        .iter()
        .any(|&b| b == 0 || b == b'\r' || b == b'\n')
    {
        return Err(bad);
    }
    Ok(())
}

/// RFC 9110 token characters.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8]) -> Result<Vec<u8>, ProtoError> {
        let mut d = ChunkedDecoder::default();
        let mut pos = 0;
        let mut body = Vec::new();
        loop {
            match d.step(&input[pos..])? {
                ChunkStep::Framing(n) => pos += n,
                ChunkStep::Data(n) => {
                    body.extend_from_slice(&input[pos..pos + n]);
                    pos += n
                }
                ChunkStep::Done(_) => return Ok(body),
                ChunkStep::NeedData => return Err(ProtoError::bad_request("incomplete")),
            }
        }
    }

    #[test]
    fn decodes_extensions_and_trailers() {
        let body = decode_all(b"5;a=b\r\nhello\r\n6 ; x\r\n world\r\n0\r\nX-T: 1\r\n\r\n").unwrap();
        assert_eq!(body, b"hello world");
    }

    #[test]
    fn rejects_bad_sizes() {
        for bad in [
            &b"0x5\r\nhello\r\n0\r\n\r\n"[..],
            b"g\r\n",
            b"\r\n",
            b"11111111111111111\r\n",
            b"5\r\nhelloXX0\r\n\r\n",
            b"5\nhello\r\n0\r\n\r\n",
        ] {
            assert!(
                decode_all(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
