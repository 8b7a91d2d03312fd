//! The lab: targets to measure (built-in models, nginx, commands, URLs) and
//! the experiments run against them: presets and plans (`plan`, testable
//! without processes), running them (`execute`), and the rows they record
//! (`record`).

pub mod execute;
pub mod plan;
pub mod presets;
pub mod record;
pub mod target;
