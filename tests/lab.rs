//! `loadlab sweep` with small counts against real targets: built-in
//! models, nginx, Go's net/http, a foreign server started from a command,
//! and presets; resuming, Ctrl-C, failed starts, CPU pinning, slow clients
//! (e6), the cap on one run, and `loadlab` with no arguments.

mod capacity;
mod caps;
mod checked;
mod ctrl_c;
mod disturbed;
mod go;
mod measurement;
mod outputs;
mod presets;
mod rates;
mod shards;
mod slow;
pub mod support;
mod targets;
