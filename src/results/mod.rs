//! Run records shared by the jobs and the report: the run configuration,
//! the raw results file and its rows. Depends on `http` and `catalog`
//! only, so the report can read everything here without importing a job.

pub mod accounting;
pub mod capacity;
pub mod config;
pub mod diagnosis;
pub mod files;
pub mod profile;
pub mod raw;
pub mod stress;
pub mod sweep_info;
pub mod whole;
