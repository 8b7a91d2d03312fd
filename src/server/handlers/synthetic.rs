//! Built-in synthetic routes: `/bytes/N`, `/echo`, `/status/N`.

use bytes::Bytes;

use super::app::App;
use super::response::{Action, Body, Response};
use crate::http::{Method, RequestHead};

/// Largest `/bytes/N` answer (400 above it). It bounds bytes sent, not
/// memory: larger answers repeat the shared pattern.
pub const MAX_SYNTHETIC_BYTES: u64 = 64 * 1024 * 1024;

/// What `/bytes/N` serves, shared by every answer without copying.
static PATTERN: std::sync::OnceLock<Bytes> = std::sync::OnceLock::new();
const PATTERN_LEN: usize = 1024 * 1024;

fn pattern() -> &'static Bytes {
    PATTERN.get_or_init(|| {
        Bytes::from(
            (0..PATTERN_LEN)
                .map(|i| b'a' + (i % 26) as u8)
                .collect::<Vec<u8>>(),
        )
    })
}

/// Returns an action if the path is a synthetic route.
pub fn route(app: &App, head: &RequestHead, path: &str) -> Option<Action> {
    if let Some(n) = path.strip_prefix("/bytes/") {
        return Some(Action::Respond(only_get(head).unwrap_or_else(|| bytes(n))));
    }
    if let Some(n) = path.strip_prefix("/status/") {
        return Some(Action::Respond(only_get(head).unwrap_or_else(|| status(n))));
    }
    if path == "/echo" {
        return Some(match head.method {
            Method::Post | Method::Put => Action::Echo {
                head: Response::new(200).header(
                    "Content-Type",
                    head.header_str("content-type")
                        .unwrap_or("application/octet-stream"),
                ),
                max_body: app.max_echo,
            },
            m => Action::Respond(Response::not_allowed(m, "POST, PUT")),
        });
    }
    None
}

/// GET, HEAD and POST are served by the read-only routes.
fn only_get(head: &RequestHead) -> Option<Response> {
    match head.method {
        Method::Get | Method::Head | Method::Post => None,
        m => Some(Response::not_allowed(m, "GET, HEAD, POST")),
    }
}

fn bytes(n: &str) -> Response {
    let Ok(n) = n.parse::<u64>() else {
        return Response::text(400, "400 Bad Request: /bytes/N needs a decimal N");
    };
    if n > MAX_SYNTHETIC_BYTES {
        return Response::text(400, "400 Bad Request: /bytes/N is limited to 64 MiB");
    }
    let body = if n as usize <= PATTERN_LEN {
        Body::Bytes(pattern().slice(..n as usize))
    } else {
        Body::Repeated {
            unit: pattern().clone(),
            offset: 0,
            len: n,
        }
    };
    Response::new(200)
        .header("Content-Type", "application/octet-stream")
        .body(body)
}

fn status(n: &str) -> Response {
    match n.parse::<u16>() {
        Ok(code @ 200..=599) => {
            let r = Response::error(code);
            // 205 may have no content either (RFC 9110 15.3.6); it says
            // so with Content-Length: 0.
            if crate::http::response::status_has_no_body(code) || code == 205 {
                Response::new(code)
            } else {
                r
            }
        }
        _ => Response::text(400, "400 Bad Request: /status/N needs N in 200..599"),
    }
}
