//! A sweep's server profiles as data: profile.json (per target: the cell
//! profiled, its samples, the kernel's share, the top kernel and user
//! functions by self time) beside one static flame graph SVG per target
//! under profiles/ (the figures come from `sys::stacks`).

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::sys::stacks::Share;

pub const PROFILE_JSON: &str = "profile.json";
/// Where the flame graphs go (not charts/: the report owns that).
pub const PROFILES_DIR: &str = "profiles";

/// One target's profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub target: String,
    /// The cell profiled, in words ("keep-alive on, c=50, 2500/s").
    pub setting: String,
    pub samples: u64,
    /// Samples perf recorded that are in no stack (unreadable: a thread
    /// caught as it exited), said rather than dropped unseen.
    #[serde(default)]
    pub left_out: u64,
    /// Samples whose innermost frame is the kernel's, %.
    pub kernel_pct: f64,
    /// Of the user-space samples, those whose stack reaches a loadlab
    /// function, % (whole stacks); None for a server that is not loadlab.
    pub user_in_loadlab_pct: Option<f64>,
    /// Innermost frames by share of all samples (self time).
    pub top_kernel: Vec<Share>,
    pub top_user: Vec<Share>,
    /// Samples whose stack passes through each area (`AREAS`), largest
    /// first, those under 1 % left out.
    #[serde(default)]
    pub areas: Vec<Share>,
    /// The flame graph's file name under `PROFILES_DIR`.
    pub flame_graph: String,
}

/// profile.json: the profiles made, and why a target has none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileFile {
    pub profiles: Vec<Profile>,
    /// (target, why it was not profiled).
    pub not_profiled: Vec<(String, String)>,
}

pub fn write(dir: &Path, f: &ProfileFile) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(f)? + "\n";
    std::fs::write(dir.join(PROFILE_JSON), text)?;
    Ok(())
}
