//! Client-side networking shared by the jobs: one URL type (`url`) and
//! one blocking response reader built on `http::client` (`response`), and
//! the load generator's TLS client configuration (`tls`).

pub mod response;
pub mod tls;
pub mod url;
