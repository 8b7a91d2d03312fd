//! `loadlab sweep --capacity`: the flags laid over the plan's capacity
//! search (objective, connections, path, probe length, rounds).

use std::time::Duration;

use super::sweep::{SweepArgs, RATE_CONNECTIONS};
use super::values::UsageError;
use crate::lab::capacity::CapacityPlan;
use crate::lab::plan::SweepPlan;

fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// `--capacity` and `--slo`: one search per target and keep-alive
/// setting, on one path and one connection count.
pub fn capacity_into(args: &SweepArgs, plan: &mut SweepPlan) -> anyhow::Result<()> {
    if !args.capacity {
        return Ok(());
    }
    if args.shards.is_some() {
        return Err(usage(
            "--capacity runs each probe from this process; it does not go with --shards",
        ));
    }
    let concurrency = match args.concurrency.as_slice() {
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
    let run_time = match args.duration.as_slice() {
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
    plan.cells = !args.rate.is_empty();
    Ok(())
}
