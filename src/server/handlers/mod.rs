//! Request handlers: plain functions from a request head (and, for uploads,
//! its streamed body) to a response, shared by every concurrency model.

mod app;
mod docroot;
pub mod files;
mod path;
mod range;
mod response;
mod static_files;
mod synthetic;
mod validators;

use crate::http::{Method, RequestHead};

pub use app::{App, DEFAULT_MAX_UPLOAD};
pub use docroot::{write_embedded_docroot, EMBEDDED_FILES};
pub use path::{decode_path, path_key, PathError};
pub use response::{Action, Body, BodySink, Job, Reply, Response, Step};
pub use static_files::StaticRoot;

/// Routes a request: synthetic routes first, then the file service, then
/// static files.
pub fn route(app: &App, head: &RequestHead) -> Action {
    let path = head.path();
    if let Some(action) = synthetic::route(app, head, path) {
        return action;
    }
    if let Some(action) = files::route(app, head, path) {
        return action;
    }
    match head.method {
        Method::Get | Method::Head | Method::Post => Action::Respond(app.root.serve(head, path)),
        m => Action::Respond(Response::not_allowed(m, "GET, HEAD, POST")),
    }
}
