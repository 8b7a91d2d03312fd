//! The project's shared vocabulary: the registry of concurrency models
//! (names, accounts, worker rules), the registry of presets (the
//! experiments), and the slow-client kinds. A leaf above `sys`, so every
//! layer names models, presets and slow clients the same way without
//! importing the server, the lab or each other.

pub mod models;
pub mod presets;
pub mod slow;
