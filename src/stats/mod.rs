//! Statistics, once, below the jobs: intervals over repeats, ratios of
//! means (paired per round and unpaired) with the rule that decides a
//! difference, and ranking into groups that can be told apart. The
//! report, compare and the lab's searches use these; pure functions of
//! numbers.

pub mod interval;
pub mod kept;
pub mod rank;
pub mod ratio;

pub use interval::{t95, Interval, NOISY_CV};
pub use kept::{rate_kept, RATE_KEPT};
pub use ratio::{log_welch, paired, unpaired, Decision, Ratio};
