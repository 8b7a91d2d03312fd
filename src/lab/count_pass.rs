//! Each cell's syscalls by kind, context switches and ring submissions,
//! counted in a short unmeasured pass of its own before the cell's first
//! measured run, and copied into every measured row of the cell. While
//! the syscall tracepoints are on, every syscall on the host is slower
//! (the load generator's too), so counting over the measured runs would
//! change the CPU and latency they report (docs/PERFORMANCE.md).

use std::collections::HashMap;
use std::time::Duration;

use super::measure::{measure, Placement};
use super::plan::{Load, PlannedRun, SweepPlan};
use crate::proc::syscalls::{self, Counters};
use crate::proc::target::Running;
use crate::results::accounting;
use crate::results::raw::{RawRow, RunConfig};

/// A counting pass lasts a quarter of its cell, at most this long: the
/// counts per request are exact (each request makes its syscalls), so a
/// few hundred requests tell them, and every pass lengthens the sweep.
const PASS_MAX: Duration = Duration::from_millis(500);

/// What a cell's pass found.
#[derive(Debug, Clone)]
enum Counted {
    /// The pass's row: its counts and the requests they cover.
    Row(Box<RawRow>),
    /// Why the cell has no counts.
    Not(String),
}

/// The passes made so far in this sweep, by instance and cell.
#[derive(Debug, Default)]
pub struct Tally {
    cells: HashMap<(usize, RunConfig), Counted>,
}

impl Tally {
    /// Counts the cell of `run` (of the `i`th instance) unless this sweep
    /// has: the counters open on the target's tree, one short run, and
    /// they close. Nothing is kept when `stop` ended the pass.
    pub fn count(
        &mut self,
        plan: &SweepPlan,
        i: usize,
        running: &Running,
        run: &PlannedRun,
        place: &Placement,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> anyhow::Result<()> {
        let key = (i, run.config.clone());
        if self.cells.contains_key(&key) {
            return Ok(());
        }
        let counted = match pass(plan, running, run, place, stop)? {
            _ if stop() => return Ok(()),
            c => c,
        };
        self.cells.insert(key, counted);
        Ok(())
    }

    /// Puts the cell's counts (or why there are none) into a measured row
    /// of it; a cell never counted leaves the row as it is.
    pub fn fill(&self, i: usize, run: &PlannedRun, row: &mut RawRow) {
        match self.cells.get(&(i, run.config.clone())) {
            Some(Counted::Row(pass)) => accounting::copy_counts(pass, row),
            Some(Counted::Not(why)) => row.accounting = Some(why.clone()),
            None => {}
        }
    }
}

/// The pass's load: a quarter of the cell's, capped at PASS_MAX, and at
/// least one request per connection.
fn shorter(load: Load, concurrency: u64) -> Load {
    match load {
        Load::Duration(d) => Load::Duration((d / 4).min(PASS_MAX)),
        Load::Requests(n) => Load::Requests((n / 4).max(concurrency).min(n)),
    }
}

fn pass(
    plan: &SweepPlan,
    running: &Running,
    run: &PlannedRun,
    place: &Placement,
    stop: &(dyn Fn() -> bool + Sync),
) -> anyhow::Result<Counted> {
    if let Some(why) = syscalls::unavailable() {
        return Ok(Counted::Not(why.to_string()));
    }
    // A shard's files are named by its run's number, which a pass has not.
    if plan.shards.is_some() {
        return Ok(Counted::Not("not counted in sharded sweeps".into()));
    }
    // A server loadlab did not start has no tree to count (the row says
    // so already: it has no server figures at all).
    let Some(pid) = running.pid else {
        return Ok(Counted::Not("loadlab did not start this server".into()));
    };
    let counters = match Counters::open(pid) {
        Ok(c) => c,
        Err(why) => return Ok(Counted::Not(why)),
    };
    let mut short = run.clone();
    short.warmup = true;
    short.load = shorter(run.load, run.config.concurrency);
    let row = measure(plan, running, &short, place, 0, Some(&counters), stop)?;
    drop(counters);
    Ok(match row.server_counted_requests {
        Some(n) if n > 0 && row.error.is_empty() => Counted::Row(Box::new(row)),
        _ if !row.error.is_empty() => {
            Counted::Not(format!("the counting pass failed: {}", row.error))
        }
        _ => Counted::Not("the counting pass completed no request".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_is_a_quarter_of_its_cell_at_most_half_a_second_and_a_request_per_connection() {
        let d = |ms| Load::Duration(Duration::from_millis(ms));
        assert_eq!(shorter(d(500), 50), d(125));
        assert_eq!(shorter(d(5000), 50), d(500));
        assert_eq!(shorter(Load::Requests(1000), 50), Load::Requests(250));
        assert_eq!(shorter(Load::Requests(300), 200), Load::Requests(200));
        assert_eq!(shorter(Load::Requests(100), 200), Load::Requests(100));
    }
}
