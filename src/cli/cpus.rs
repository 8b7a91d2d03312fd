//! `--cpus` and `--client-cpus`: how a sweep splits the CPUs loadlab may
//! use between the target and the load generator. By default the target
//! gets the first half and the load generator the rest, so neither
//! measures the other's CPU time.

use super::values::UsageError;
use crate::lab::plan::SweepPlan;
use crate::proc::affinity;

/// One `--cpus` value: a count, or `all` (the target unrestricted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuCount(pub Option<usize>);

pub fn parse_cpus(s: &str) -> Result<CpuCount, String> {
    if s == "all" {
        return Ok(CpuCount(None));
    }
    match s.parse::<usize>() {
        Ok(n) => Ok(CpuCount(Some(n))),
        Err(_) => Err(format!("'{s}' is not a CPU count or 'all'")),
    }
}

/// Puts `--cpus` and `--client-cpus` into `plan`: counts within the CPUs
/// loadlab may use, and a load generator that never shares a CPU with
/// the target it measures.
pub fn apply(
    plan: &mut SweepPlan,
    cpus: &[CpuCount],
    client_cpus: Option<usize>,
) -> anyhow::Result<()> {
    let usage = |m: String| anyhow::Error::from(UsageError(m));
    if !cpus.is_empty() {
        for n in cpus.iter().filter_map(|c| c.0) {
            affinity::first_allowed(n).map_err(usage)?;
        }
        plan.cpus = cpus.iter().map(|c| c.0).collect();
        plan.cpus_asked = true;
    }
    let Some(k) = client_cpus else {
        return Ok(());
    };
    let allowed = affinity::allowed_cpus().len();
    if k == 0 || k > allowed {
        return Err(usage(format!(
            "--client-cpus {k}: loadlab may use {allowed} CPU{}",
            if allowed == 1 { "" } else { "s" }
        )));
    }
    for c in &plan.cpus {
        match c {
            None => {
                return Err(usage(format!(
                    "--client-cpus {k} would share CPUs with a target that may use all {allowed}: give the target --cpus N as well"
                )))
            }
            Some(n) if n + k > allowed => {
                return Err(usage(format!(
                    "--client-cpus {k} overlaps the target's CPUs (--cpus {n}): loadlab may use {allowed}, so together they ask for {}",
                    n + k
                )))
            }
            Some(_) => {}
        }
    }
    plan.client_cpus = Some(k);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_counts_and_all() {
        assert_eq!(parse_cpus("2"), Ok(CpuCount(Some(2))));
        assert_eq!(parse_cpus("all"), Ok(CpuCount(None)));
        assert!(parse_cpus("half").unwrap_err().contains("'half'"));
    }
}
