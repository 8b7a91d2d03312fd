//! What a handler gives back: a response (head fields and a body, which
//! may be a file range for sendfile), or a sink that a request body
//! streams into before the answer.

use std::fs::File;

use bytes::Bytes;

use crate::http::Method;

/// A response body.
#[derive(Debug)]
pub enum Body {
    Empty,
    Bytes(Bytes),
    /// `len` bytes of `file` from `offset`, sent with sendfile.
    File {
        file: File,
        offset: u64,
        len: u64,
    },
    /// `len` bytes of `unit` repeated, from `offset` into it: slices of one
    /// shared buffer, so a large synthetic answer allocates nothing.
    Repeated {
        unit: Bytes,
        offset: u64,
        len: u64,
    },
}

impl Body {
    pub fn len(&self) -> u64 {
        match self {
            Body::Empty => 0,
            Body::Bytes(b) => b.len() as u64,
            Body::File { len, .. } | Body::Repeated { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A response: status, extra pre-encoded `Name: value\r\n` lines (the
/// protocol layer adds Date, Server, Content-Length, Connection) and a body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Bytes,
    pub body: Body,
    /// Close the connection after this response.
    pub close: bool,
}

impl Response {
    pub fn new(status: u16) -> Self {
        Response {
            status,
            headers: Bytes::new(),
            body: Body::Empty,
            close: false,
        }
    }

    /// A short plain-text response, used for errors and simple answers.
    pub fn text(status: u16, msg: &str) -> Self {
        let mut r = Response::new(status).header("Content-Type", "text/plain; charset=utf-8");
        r.body = Body::Bytes(Bytes::from(format!("{msg}\n")));
        r
    }

    /// The standard error body for a status: "404 Not Found".
    pub fn error(status: u16) -> Self {
        let msg = format!("{} {}", status, crate::http::response::reason(status));
        Response::text(status, &msg)
    }

    /// For a method a route does not take: 405 with `Allow` if the server
    /// implements it elsewhere, else 501 (RFC 9110 15.5.6, 15.6.2).
    pub fn not_allowed(method: Method, allow: &str) -> Self {
        match method {
            Method::Get | Method::Head | Method::Post | Method::Put | Method::Delete => {
                Response::error(405).header("Allow", allow)
            }
            _ => Response::error(501),
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        let mut h = Vec::with_capacity(self.headers.len() + name.len() + value.len() + 4);
        h.extend_from_slice(&self.headers);
        h.extend_from_slice(name.as_bytes());
        h.extend_from_slice(b": ");
        h.extend_from_slice(value.as_bytes());
        h.extend_from_slice(b"\r\n");
        self.headers = Bytes::from(h);
        self
    }

    pub fn body(mut self, body: Body) -> Self {
        self.body = body;
        self
    }

    pub fn closing(mut self) -> Self {
        self.close = true;
        self
    }
}

/// Blocking work (disk reads, fsync, rename) that produces a response,
/// returned so each model picks where it runs: event loops hand it to
/// `server::offload`, so a slow disk holds up none of their connections.
pub type Job = Box<dyn FnOnce() -> Response + Send + 'static>;

/// Blocking work amid a request body (an upload writing a full block): no
/// more body is decoded until it has run; an error acts as one from `data`.
pub type Step = Box<dyn FnOnce() -> Result<(), Response> + Send + 'static>;

/// A handler's answer: ready now, or once its blocking `Job` has run.
pub enum Reply {
    Ready(Response),
    Defer(Job),
}

impl From<Response> for Reply {
    fn from(r: Response) -> Self {
        Reply::Ready(r)
    }
}

impl Reply {
    /// The response, running any job here: for callers that may block.
    pub fn run(self) -> Response {
        match self {
            Reply::Ready(r) => r,
            Reply::Defer(job) => job(),
        }
    }
}

/// Consumes a request body as it arrives. Dropping a sink without calling
/// `finish` means the request was aborted; sinks that write files must then
/// leave nothing behind (and so must a deferred job that is dropped unrun).
pub trait BodySink: Send {
    /// The largest body this sink accepts; more is answered with 413.
    fn max_body(&self) -> u64;
    /// A piece of the body; an error response closes the connection.
    fn data(&mut self, chunk: &[u8]) -> Result<(), Response>;
    /// Blocking work `data` left to run before more body; asked after each.
    fn take_step(&mut self) -> Option<Step> {
        None
    }
    /// The body is complete: the response, or the blocking job making it.
    fn finish(self: Box<Self>) -> Reply;
}

/// What a handler wants done with a request.
pub enum Action {
    /// Answer now; any request body is read and discarded first.
    Respond(Response),
    /// Answer with this job's response, once any body is discarded.
    Defer(Job),
    /// Stream the body into this sink, then answer with what it returns.
    ReadBody(Box<dyn BodySink>),
    /// Answer with this head and the request body itself (up to `max_body`),
    /// sent back as it is read, so `/echo` holds no body in memory.
    Echo { head: Response, max_body: u64 },
}
