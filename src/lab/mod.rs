//! The lab: targets to measure (built-in models, nginx, commands, URLs) and
//! the experiments run against them: presets and plans (`plan`, testable
//! without processes), running them (`execute`, one run in `measure`), the
//! rows they record (`record`) and the host's conditions beside them
//! (`conditions`).

pub mod capacity;
pub mod conditions;
mod count_pass;
pub mod diagnose;
pub mod execute;
pub mod idle;
pub mod measure;
pub mod plan;
pub mod presets;
mod profile_pass;
pub mod record;
pub mod shards;
