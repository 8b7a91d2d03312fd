//! Client-side networking shared by the jobs: one URL type (`url`) and
//! one blocking response reader built on `http::client` (`response`).

pub mod response;
pub mod url;
