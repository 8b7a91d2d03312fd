//! What a capacity search is asked for: the objective, the settings and
//! connections searched, the probes' length, the ladder's ends, the
//! rounds, and the bare run's common rate. Plain data, so the sweep's plan
//! can hold it.

use std::time::Duration;

use crate::results::capacity::Objective;

/// What to search for and how long each probe runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityPlan {
    pub objective: Objective,
    /// The keep-alive settings searched (each its own capacity).
    pub keepalive: Vec<bool>,
    /// Connections that carry the offered rate.
    pub concurrency: usize,
    pub path: String,
    /// How long each probe lasts.
    pub run_time: Duration,
    /// The ladder's first rate and the highest it goes.
    pub floor: f64,
    pub ceiling: f64,
    /// Rounds that bisect the final bracket again, for the interval.
    pub rounds: usize,
    /// Runs per round's bisection.
    pub round_steps: usize,
    /// The bare run: the sweep's cells are then offered this share of the
    /// lowest capacity found, so every target is compared at one rate it
    /// sustains. None: the cells keep the plan's rates.
    pub common_share: Option<f64>,
}

impl CapacityPlan {
    /// The ladder's first rate and its ceiling (requests/s): the slowest
    /// server worth a search serves a thousand a second, and a million is
    /// beyond any one load generator here.
    pub const FLOOR: f64 = 1000.0;
    pub const CEILING: f64 = 1e6;
    /// Runs per round when the final bracket is bisected again: a 1.27 x
    /// bracket (5 % widened by 10 % each way) to about 3 %.
    pub const ROUND_STEPS: usize = 3;
    /// The bracket the search ends with is within this of its low end.
    pub const TOLERANCE: f64 = 0.05;
    /// A round bisects the final bracket widened by this factor each way,
    /// so the capacity can come out on either side of the search's.
    pub const ROUND_WIDEN: f64 = 1.1;
}
