//! How a message's body is framed (RFC 9112 section 6.3): the framing
//! fields gathered from a head and the one function that decides, for the
//! server's requests and the load generator's responses alike.

use super::chunked::is_tchar;
use super::error::ProtoError;
use super::request::Version;

/// Iterates the comma-separated, trimmed, non-empty elements of a list field.
pub(super) fn list_items(v: &[u8]) -> impl Iterator<Item = &[u8]> {
    v.split(|&b| b == b',')
        .map(|s| s.trim_ascii())
        .filter(|s| !s.is_empty())
}

/// Which message a body belongs to: RFC 9112 section 6.3 frames requests
/// and responses differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Message {
    Request(Version),
    /// A response and whether it answers a HEAD request.
    Response {
        status: u16,
        to_head: bool,
    },
}

/// How a message body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body: the message ends with its head.
    None,
    Length(u64),
    Chunked,
    /// The body runs until the server closes the connection (responses).
    UntilClose,
}

/// The fields that frame a body, gathered while a head's fields are read.
/// Their values are checked as they arrive, so a malformed one is refused
/// in the order the fields came (RFC 9110 8.6, RFC 9112 6.1).
#[derive(Debug, Default)]
pub(crate) struct FramingFields<'a> {
    /// The Content-Length, the same in every field line and list element.
    content_length: Option<u64>,
    /// The transfer codings of every Transfer-Encoding line, in order.
    codings: Vec<&'a [u8]>,
}

impl<'a> FramingFields<'a> {
    /// Takes in one header field: true if it was a framing field.
    pub(crate) fn add(&mut self, name: &[u8], value: &'a [u8]) -> Result<bool, ProtoError> {
        if name.eq_ignore_ascii_case(b"content-length") {
            for item in value.split(|&b| b == b',').map(|s| s.trim_ascii()) {
                let v = parse_content_length(item)?;
                if self.content_length.is_some_and(|c| c != v) {
                    return Err(ProtoError::bad_request("conflicting Content-Length"));
                }
                self.content_length = Some(v);
            }
            Ok(true)
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            let before = self.codings.len();
            self.codings.extend(list_items(value));
            if self.codings.len() == before {
                return Err(ProtoError::bad_request("empty Transfer-Encoding"));
            }
            Ok(true)
        } else {
            Ok(false)
        }
    }
}

/// How the body of `message` is framed, following RFC 9112 section 6.3
/// step by step (step 2, a tunnel after a 2xx to CONNECT, never arises:
/// the server answers CONNECT with 501 and the load generator never sends
/// it).
pub(crate) fn body_framing(
    message: Message,
    fields: &FramingFields<'_>,
) -> Result<Framing, ProtoError> {
    // 1. A response to HEAD, and every 1xx, 204 and 304, ends with its
    //    head, whatever its fields say.
    if let Message::Response { status, to_head } = message {
        if to_head || (100..200).contains(&status) || status == 204 || status == 304 {
            return Ok(Framing::None);
        }
    }
    let chunked = |t: &[u8]| t.eq_ignore_ascii_case(b"chunked");
    if let Some(last) = fields.codings.last() {
        match message {
            // 4. A response with chunked last is chunked, else it runs
            //    until the connection closes; 3. either way, Transfer-
            //    Encoding overrides any Content-Length.
            Message::Response { .. } if chunked(last) => return Ok(Framing::Chunked),
            Message::Response { .. } => return Ok(Framing::UntilClose),
            // RFC 9112 6.1: Transfer-Encoding in an HTTP/1.0 message
            // means faulty framing.
            Message::Request(Version::Http10) => {
                return Err(ProtoError::bad_request("Transfer-Encoding in HTTP/1.0"))
            }
            // 3. Both fields in a request may be an attempt at request
            //    smuggling: refused, and the connection closes (as after
            //    every error).
            Message::Request(_) if fields.content_length.is_some() => {
                return Err(ProtoError::bad_request(
                    "Content-Length with Transfer-Encoding",
                ))
            }
            // 4. A request is chunked, with chunked last and only there;
            //    anything else cannot be framed: 400, or 501 for codings
            //    this server does not decode (RFC 9112 6.1).
            Message::Request(_) => {
                check_request_codings(&fields.codings)?;
                return Ok(Framing::Chunked);
            }
        }
    }
    // 5. An invalid Content-Length was refused when its field was read;
    //    6. a valid one gives the length.
    if let Some(n) = fields.content_length {
        return Ok(Framing::Length(n));
    }
    match message {
        // 7. A request with neither field has no body.
        Message::Request(_) => Ok(Framing::None),
        // 8. A response with neither runs until the connection closes.
        Message::Response { .. } => Ok(Framing::UntilClose),
    }
}

fn parse_content_length(v: &[u8]) -> Result<u64, ProtoError> {
    let bad = ProtoError::bad_request("invalid Content-Length");
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return Err(bad);
    }
    v.iter().try_fold(0u64, |acc, &d| {
        acc.checked_mul(10)
            .and_then(|a| a.checked_add((d - b'0') as u64))
            .ok_or(bad)
    })
}

/// A request's transfer codings: chunked, once and last, and nothing else
/// (codings known by name but not decoded are 501, like unknown ones).
fn check_request_codings(te: &[&[u8]]) -> Result<(), ProtoError> {
    const KNOWN: [&[u8]; 6] = [
        b"chunked",
        b"gzip",
        b"x-gzip",
        b"deflate",
        b"compress",
        b"x-compress",
    ];
    for t in te {
        let name = t.split(|&b| b == b';').next().unwrap_or(b"").trim_ascii();
        if !name.iter().all(|&b| is_tchar(b)) {
            return Err(ProtoError::bad_request("malformed transfer coding"));
        }
        if !KNOWN.iter().any(|k| name.eq_ignore_ascii_case(k)) {
            return Err(ProtoError::new(501, "unknown transfer coding"));
        }
    }
    let chunked = |t: &[u8]| t.eq_ignore_ascii_case(b"chunked");
    let last_chunked = te.last().is_some_and(|t| chunked(t));
    if !last_chunked || te.iter().filter(|t| chunked(t)).count() > 1 {
        return Err(ProtoError::bad_request(
            "chunked is not the final transfer coding",
        ));
    }
    if te.len() > 1 {
        return Err(ProtoError::new(501, "transfer coding not supported"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The framing of a message with these header fields.
    fn frame(message: Message, fields: &[(&str, &str)]) -> Result<Framing, u16> {
        let mut f = FramingFields::default();
        for (name, value) in fields {
            f.add(name.as_bytes(), value.as_bytes())
                .map_err(|e| e.status)?;
        }
        body_framing(message, &f).map_err(|e| e.status)
    }

    const REQ: Message = Message::Request(Version::Http11);
    const OK: Message = Message::Response {
        status: 200,
        to_head: false,
    };

    #[test]
    fn step_1_bodiless_responses_ignore_their_fields() {
        let te = [("Transfer-Encoding", "chunked")];
        let head = Message::Response {
            status: 200,
            to_head: true,
        };
        assert_eq!(frame(head, &[("Content-Length", "5")]), Ok(Framing::None));
        for status in [100, 101, 204, 304] {
            let m = Message::Response {
                status,
                to_head: false,
            };
            assert_eq!(frame(m, &te), Ok(Framing::None), "{status}");
        }
    }

    #[test]
    fn steps_3_and_4_transfer_encoding_overrides_or_is_refused() {
        let both = [("Content-Length", "5"), ("Transfer-Encoding", "chunked")];
        assert_eq!(frame(OK, &both), Ok(Framing::Chunked));
        assert_eq!(frame(REQ, &both), Err(400));
        let gzip = [("Transfer-Encoding", "gzip"), ("Content-Length", "5")];
        assert_eq!(frame(OK, &gzip), Ok(Framing::UntilClose));
        let lines = [
            ("Transfer-Encoding", "gzip"),
            ("Transfer-Encoding", "chunked"),
        ];
        assert_eq!(frame(OK, &lines), Ok(Framing::Chunked));
        assert_eq!(frame(REQ, &lines), Err(501));
        assert_eq!(
            frame(REQ, &[("Transfer-Encoding", "chunked")]),
            Ok(Framing::Chunked)
        );
        assert_eq!(frame(REQ, &[("Transfer-Encoding", "gzip")]), Err(400));
        assert_eq!(
            frame(REQ, &[("Transfer-Encoding", "chunked, chunked")]),
            Err(400)
        );
        assert_eq!(frame(REQ, &[("Transfer-Encoding", "br")]), Err(501));
        assert_eq!(frame(REQ, &[("Transfer-Encoding", " , ")]), Err(400));
        let http10 = Message::Request(Version::Http10);
        assert_eq!(frame(http10, &[("Transfer-Encoding", "chunked")]), Err(400));
    }

    #[test]
    fn steps_5_and_6_content_length_is_checked_then_used() {
        for bad in ["", "+5", "-1", "5 5", "0x5", "99999999999999999999"] {
            assert_eq!(frame(REQ, &[("Content-Length", bad)]), Err(400), "{bad:?}");
            assert_eq!(frame(OK, &[("Content-Length", bad)]), Err(400), "{bad:?}");
        }
        let same = [("Content-Length", "5, 5"), ("Content-Length", "5")];
        assert_eq!(frame(REQ, &same), Ok(Framing::Length(5)));
        let differ = [("Content-Length", "5"), ("Content-Length", "6")];
        assert_eq!(frame(OK, &differ), Err(400));
        assert_eq!(
            frame(OK, &[("Content-Length", "0")]),
            Ok(Framing::Length(0))
        );
    }

    #[test]
    fn steps_7_and_8_neither_field() {
        assert_eq!(frame(REQ, &[("Host", "x")]), Ok(Framing::None));
        assert_eq!(frame(OK, &[("Server", "x")]), Ok(Framing::UntilClose));
    }
}
