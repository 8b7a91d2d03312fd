//! The lab: targets to measure (built-in models, nginx, commands, URLs) and
//! the experiments run against them.

pub mod presets;
pub mod sweep;
pub mod target;
