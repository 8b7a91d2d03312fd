//! Run records shared by the jobs and the report: the run configuration,
//! the raw results file and its rows, and the registries of models and
//! presets. Depends on `http` only, so the report can read everything here
//! without importing a job.

pub mod accounting;
pub mod capacity;
pub mod config;
pub mod diagnosis;
pub mod files;
pub mod models;
pub mod presets;
pub mod profile;
pub mod raw;
pub mod slow;
pub mod stress;
pub mod sweep_info;
pub mod whole;
