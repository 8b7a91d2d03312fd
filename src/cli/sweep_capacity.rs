//! `loadlab sweep --capacity`: the flags laid over the plan's capacity
//! search (objective, connections, path, probe length, rounds).

use std::time::Duration;

use super::values::UsageError;
use crate::lab::capacity::settings::CapacityPlan;
use crate::lab::plan::SweepPlan;
use crate::results::capacity::Objective;

/// Connections per cell that carry an offered rate when --concurrency is
/// not given: enough for tens of thousands of requests/s over loopback,
/// few enough for any server that takes connections at all.
pub const RATE_CONNECTIONS: usize = 50;

/// The sweep flags a capacity search reads.
pub struct CapacityFlags<'a> {
    pub capacity: bool,
    pub slo: Option<Objective>,
    pub shards: bool,
    pub concurrency: &'a [usize],
    pub duration: &'a [Duration],
    /// --rate was given: the cells are made too.
    pub rates: bool,
}

fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// `--capacity` and `--slo`: one search per target and keep-alive
/// setting, on one path and one connection count.
pub fn capacity_into(args: &CapacityFlags, plan: &mut SweepPlan) -> anyhow::Result<()> {
    if !args.capacity {
        return Ok(());
    }
    if args.shards {
        return Err(usage(
            "--capacity runs each probe from this process; it does not go with --shards",
        ));
    }
    let concurrency = match args.concurrency {
        [] => RATE_CONNECTIONS,
        [c] => *c,
        _ => {
            return Err(usage(
                "--capacity searches at one --concurrency; give one value",
            ))
        }
    };
    if plan.paths.len() > 1 {
        return Err(usage("--capacity searches one --path; give one"));
    }
    let run_time = match args.duration {
        [] => Duration::from_secs(1),
        [d] => *d,
        _ => {
            return Err(usage(
                "--capacity runs each probe for one --duration; give one",
            ))
        }
    };
    plan.capacity = Some(CapacityPlan {
        objective: args.slo.unwrap_or_default(),
        keepalive: plan.keepalive.clone(),
        concurrency,
        path: plan.paths.first().cloned().unwrap_or_else(|| "/".into()),
        run_time,
        floor: CapacityPlan::FLOOR,
        ceiling: CapacityPlan::CEILING,
        rounds: plan.repeat,
        round_steps: CapacityPlan::ROUND_STEPS,
        common_share: None,
    });
    plan.cells = args.rates;
    Ok(())
}
