//! Run records shared by the jobs and the report: the raw results file,
//! its rows and the model registry's metadata. Depends on `http` only, so
//! the report can read everything here without importing a job.

pub mod models;
pub mod raw;
