//! Response head encoding and reason phrases.

use super::date::append_http_date;

/// The product token, as a literal that `concat!` can take in.
macro_rules! server_name {
    () => {
        concat!("loadlab/", env!("CARGO_PKG_VERSION"))
    };
}

/// Product token sent in every `Server` header.
pub const SERVER_NAME: &str = server_name!();

pub fn reason(status: u16) -> &'static str {
    // RFC 9110 section 15, plus RFC 6585's 428, 429 and 431.
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        507 => "Insufficient Storage",
        _ => "Unknown",
    }
}

/// Statuses that never carry a body or a Content-Length of their body.
pub fn status_has_no_body(status: u16) -> bool {
    (100..200).contains(&status) || status == 204 || status == 304
}

/// Appends a decimal number without going through `fmt`, two digits per
/// division, as every response carries a Content-Length.
pub fn append_u64(out: &mut Vec<u8>, mut n: u64) {
    /// "00", "01", ... "99".
    const PAIRS: [u8; 200] = {
        let mut t = [0u8; 200];
        let mut i = 0;
        while i < 100 {
            t[2 * i] = b'0' + (i / 10) as u8;
            t[2 * i + 1] = b'0' + (i % 10) as u8;
            i += 1;
        }
        t
    };
    let pair = |k: u64| {
        let k = k as usize * 2;
        [PAIRS[k], PAIRS[k + 1]]
    };
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    while n >= 100 {
        i -= 2;
        tmp[i..i + 2].copy_from_slice(&pair(n % 100));
        n /= 100;
    }
    if n >= 10 {
        i -= 2;
        tmp[i..i + 2].copy_from_slice(&pair(n));
    } else {
        i -= 1;
        tmp[i] = b'0' + n as u8;
    }
    out.extend_from_slice(&tmp[i..]);
}

/// A 200 response's head up to its Date value.
const HEAD_200: &str = concat!("HTTP/1.1 200 OK\r\nServer: ", server_name!(), "\r\nDate: ");

/// The most `encode_head` writes besides `headers`: the longest status
/// line, Server, Date, a 20-digit Content-Length and Connection, with
/// room to spare.
pub(crate) const HEAD_FIXED_MAX: usize = 256;

/// Encodes a status line and the headers every response carries. `headers`
/// holds further pre-encoded `Name: value\r\n` lines. `connection` is the
/// value of the Connection header, if one is needed.
pub(crate) fn encode_head(
    out: &mut Vec<u8>,
    status: u16,
    content_length: Option<u64>,
    connection: Option<&str>,
    headers: &[u8],
) {
    // Room for all of it at once, so no push below grows the buffer.
    out.reserve(HEAD_FIXED_MAX + headers.len());
    if status == 200 {
        // Nearly every response: its fixed start in one copy.
        out.extend_from_slice(HEAD_200.as_bytes());
    } else {
        out.extend_from_slice(b"HTTP/1.1 ");
        append_u64(out, status as u64);
        out.push(b' ');
        out.extend_from_slice(reason(status).as_bytes());
        out.extend_from_slice(b"\r\nServer: ");
        out.extend_from_slice(SERVER_NAME.as_bytes());
        out.extend_from_slice(b"\r\nDate: ");
    }
    append_http_date(out);
    out.extend_from_slice(b"\r\n");
    if let Some(len) = content_length {
        out.extend_from_slice(b"Content-Length: ");
        append_u64(out, len);
        out.extend_from_slice(b"\r\n");
    }
    if let Some(c) = connection {
        out.extend_from_slice(b"Connection: ");
        out.extend_from_slice(c.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(headers);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length of number, and the places a pair of digits may be
    /// wrong (a 0 or 9 on either side of a pair boundary).
    #[test]
    fn numbers_are_written_as_fmt_writes_them() {
        let mut cases = vec![0, u64::MAX];
        for d in 0..20 {
            let p = 10u64.pow(d);
            cases.extend([
                p,
                p.saturating_sub(1),
                p.saturating_add(1),
                p.saturating_mul(9),
            ]);
        }
        cases.extend(0..1000);
        for n in cases {
            let mut out = b"x".to_vec();
            append_u64(&mut out, n);
            assert_eq!(out, format!("x{n}").into_bytes());
        }
    }

    /// 200's pre-built start says what the general path would.
    #[test]
    fn every_status_line_is_followed_by_server_and_date() {
        for status in [200, 206, 404] {
            let mut out = Vec::new();
            encode_head(&mut out, status, Some(5), Some("close"), b"X-A: b\r\n");
            let text = String::from_utf8(out).unwrap();
            let start = format!(
                "HTTP/1.1 {status} {}\r\nServer: {SERVER_NAME}\r\nDate: ",
                reason(status)
            );
            assert!(text.starts_with(&start), "{text}");
            let rest = &text[start.len() + 29..];
            assert_eq!(
                rest,
                "\r\nContent-Length: 5\r\nConnection: close\r\nX-A: b\r\n\r\n"
            );
        }
    }
}
