//! The lab: targets to measure (built-in models, nginx, commands, URLs) and
//! the experiments run against them.

pub mod affinity;
pub mod child;
pub mod monitor;
pub mod nginx;
pub mod ports;
pub mod presets;
pub mod raw;
pub mod sweep;
pub mod target;
