//! Client-side networking shared by the jobs: one URL type and one
//! blocking response reader built on `http::client`.
