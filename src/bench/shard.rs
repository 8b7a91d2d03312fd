//! Sharded runs: which part of a load one process applies (`--shard I/N`),
//! its exact share of each total, and the hash that tells shards of one
//! load configuration from shards of another.

use std::fmt;

use super::stats::HistogramParams;

/// A `--shard` value that does not name a shard, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

/// Most shards a load may be split into: far beyond any launcher's task
/// count, and small enough that a typo (`--shard 0/40000000`) is refused.
pub const MAX_SHARDS: u32 = 100_000;

/// Environment variables `--shard auto` reads, in order: Slurm's rank and
/// task count, then a Kubernetes Indexed Job's index with the count the
/// manifest sets.
pub const AUTO_SOURCES: [(&str, &str); 2] = [
    ("SLURM_PROCID", "SLURM_NTASKS"),
    ("JOB_COMPLETION_INDEX", "LOADLAB_SHARDS"),
];

/// Shard `index` of `count` (0-based, as Slurm's SLURM_PROCID).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

fn bad<T>(msg: impl Into<String>) -> Result<T, SpecError> {
    Err(SpecError(msg.into()))
}

impl Shard {
    /// Parses `I/N`, or `auto` through `env` (the process environment in
    /// the CLI, a table in tests).
    pub fn parse(spec: &str, env: impl Fn(&str) -> Option<String>) -> Result<Shard, SpecError> {
        if spec == "auto" {
            for (index, count) in AUTO_SOURCES {
                if let (Some(i), Some(n)) = (env(index), env(count)) {
                    return Shard::from_parts(&i, &n)
                        .map_err(|e| SpecError(format!("--shard auto ({index}/{count}): {e}")));
                }
            }
            return bad(
                "--shard auto needs SLURM_PROCID and SLURM_NTASKS (srun sets them) \
                 or JOB_COMPLETION_INDEX and LOADLAB_SHARDS",
            );
        }
        let Some((i, n)) = spec.split_once('/') else {
            return bad(format!(
                "invalid --shard '{spec}': expected I/N (e.g. 0/4) or auto"
            ));
        };
        Shard::from_parts(i, n).map_err(|e| SpecError(format!("invalid --shard '{spec}': {e}")))
    }

    fn from_parts(i: &str, n: &str) -> Result<Shard, SpecError> {
        let num = |s: &str| s.trim().parse::<u32>().ok();
        let (Some(index), Some(count)) = (num(i), num(n)) else {
            return bad("index and count must be whole numbers");
        };
        if count == 0 || count > MAX_SHARDS {
            return bad(format!("the shard count must be 1 to {MAX_SHARDS}"));
        }
        if index >= count {
            return bad(format!(
                "shard index {index} is not below the count {count} (indices start at 0)"
            ));
        }
        Ok(Shard { index, count })
    }

    /// This shard's exact share of `total`: floor((i+1)X/N) - floor(iX/N),
    /// so the shares of all shards add up to `total`.
    pub fn share(&self, total: u64) -> u64 {
        let cut = |i: u32| (u128::from(total) * u128::from(i) / u128::from(self.count)) as u64;
        cut(self.index + 1) - cut(self.index)
    }

    /// This shard's share of an open-loop run's `total` requests: the
    /// slots j < total with j mod N = i, i.e. ceil((X-i)/N). The shares add
    /// up to `total` like [`Shard::share`]'s but fall to the lowest
    /// indices first, so that the shards' strided schedules together send
    /// exactly the first `total` slots of one process's schedule.
    pub fn slot_share(&self, total: u64) -> u64 {
        total
            .saturating_sub(u64::from(self.index))
            .div_ceil(u64::from(self.count))
    }

    /// Expands `{shard}` and `{shards}` in an output path.
    pub fn expand(&self, template: &str) -> String {
        template
            .replace("{shards}", &self.count.to_string())
            .replace("{shard}", &self.index.to_string())
    }
}

/// What a shard's JSON records about the load it is part of.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShardInfo {
    pub index: u32,
    pub count: u32,
    /// `load_id::config_hash` of the whole load.
    pub config_hash: String,
    pub histogram: HistogramParams,
}

/// Why a set of runs is not the complete set of shards of one load;
/// indices are positions in the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("run {run} is not a shard (run without --shard) but run {shard} is")]
    NotAShard { run: usize, shard: usize },
    #[error("runs {first} and {second} are both shard {index}")]
    Duplicate {
        index: u32,
        first: usize,
        second: usize,
    },
    #[error("run {other} is one of {other_count} shards, run 0 one of {count}")]
    MixedCounts {
        count: u32,
        other: usize,
        other_count: u32,
    },
    #[error("shard{} {} of {count} missing", if .missing.len() == 1 { "" } else { "s" }, list(.missing))]
    Missing { count: u32, missing: Vec<u32> },
    #[error("run {other} ran another load configuration than run 0 (config hash {b} vs {a})")]
    MixedConfig { other: usize, a: String, b: String },
    #[error("run {other} recorded its latencies with other histogram parameters than run 0")]
    MixedHistograms { other: usize },
}

fn list(v: &[u32]) -> String {
    let s: Vec<String> = v.iter().map(u32::to_string).collect();
    s.join(", ")
}

/// Checks that `shards` (one per run; None for a run made without
/// `--shard`) are every shard of one load exactly once. Runs of which none
/// is a shard pass: an ad-hoc merge of simultaneous runs.
pub fn check_complete(shards: &[Option<&ShardInfo>]) -> Result<(), ShardError> {
    let Some(first) = shards.iter().position(Option::is_some) else {
        return Ok(());
    };
    if let Some(run) = shards.iter().position(Option::is_none) {
        return Err(ShardError::NotAShard { run, shard: first });
    }
    let all: Vec<&ShardInfo> = shards.iter().flatten().copied().collect();
    let s0 = all[0];
    let mut seen: Vec<Option<usize>> = vec![None; s0.count as usize];
    for (run, s) in all.iter().enumerate() {
        if s.count != s0.count {
            return Err(ShardError::MixedCounts {
                count: s0.count,
                other: run,
                other_count: s.count,
            });
        }
        if s.histogram != s0.histogram {
            return Err(ShardError::MixedHistograms { other: run });
        }
        if s.config_hash != s0.config_hash {
            return Err(ShardError::MixedConfig {
                other: run,
                a: s0.config_hash.clone(),
                b: s.config_hash.clone(),
            });
        }
        // An index is below its count: `Shard::parse` and JSON from it hold it.
        let Some(slot) = seen.get_mut(s.index as usize) else {
            return Err(ShardError::Missing {
                count: s0.count,
                missing: vec![s.index],
            });
        };
        if let Some(first) = slot.replace(run) {
            return Err(ShardError::Duplicate {
                index: s.index,
                first,
                second: run,
            });
        }
    }
    let missing: Vec<u32> = (0..s0.count)
        .filter(|&i| seen[i as usize].is_none())
        .collect();
    match missing.is_empty() {
        true => Ok(()),
        false => Err(ShardError::Missing {
            count: s0.count,
            missing,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::HISTOGRAM_PARAMS;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn shares_add_up_to_the_totals() {
        for total in [0u64, 1, 4, 7, 10, 999, 1_000_003, u64::MAX] {
            for count in [1u32, 2, 3, 4, 7, 16] {
                let shares: Vec<u64> = (0..count)
                    .map(|index| Shard { index, count }.share(total))
                    .collect();
                let sum: u128 = shares.iter().map(|&s| u128::from(s)).sum();
                assert_eq!(sum, u128::from(total), "{total} over {count}");
                let (lo, hi) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
                assert!(hi - lo <= 1, "{total} over {count}: {shares:?}");
            }
        }
        assert_eq!(Shard { index: 0, count: 3 }.share(10), 3);
        assert_eq!(Shard { index: 1, count: 3 }.share(10), 3);
        assert_eq!(Shard { index: 2, count: 3 }.share(10), 4);
        for (total, count) in [(10u64, 3u32), (1000, 7), (2, 4), (0, 2)] {
            let sum: u64 = (0..count)
                .map(|index| Shard { index, count }.slot_share(total))
                .sum();
            assert_eq!(sum, total, "{total} over {count}");
        }
    }

    #[test]
    fn specs_parse_and_bad_ones_say_why_in_one_line() {
        let none = env(&[]);
        assert_eq!(Shard::parse("2/4", &none), Ok(Shard { index: 2, count: 4 }));
        for (spec, why) in [
            ("4/4", "not below the count"),
            ("1/0", "count must be 1 to"),
            ("a/4", "whole numbers"),
            ("-1/4", "whole numbers"),
            ("3", "expected I/N"),
            ("1/200000", "count must be 1 to"),
            ("auto", "SLURM_PROCID"),
        ] {
            let e = Shard::parse(spec, &none).unwrap_err().0;
            assert!(e.contains(why), "{spec}: {e}");
            assert!(!e.contains('\n'), "{spec}: {e}");
        }
        let slurm = env(&[("SLURM_PROCID", "3"), ("SLURM_NTASKS", "4")]);
        assert_eq!(
            Shard::parse("auto", &slurm),
            Ok(Shard { index: 3, count: 4 })
        );
        let k8s = env(&[("JOB_COMPLETION_INDEX", "1"), ("LOADLAB_SHARDS", "2")]);
        assert_eq!(Shard::parse("auto", &k8s), Ok(Shard { index: 1, count: 2 }));
        let broken = env(&[("SLURM_PROCID", "4"), ("SLURM_NTASKS", "4")]);
        let e = Shard::parse("auto", &broken).unwrap_err().0;
        assert!(
            e.starts_with("--shard auto (SLURM_PROCID/SLURM_NTASKS)"),
            "{e}"
        );
    }

    fn info(index: u32, count: u32) -> ShardInfo {
        ShardInfo {
            index,
            count,
            config_hash: "sha256:aa".into(),
            histogram: HISTOGRAM_PARAMS,
        }
    }

    #[test]
    fn merge_needs_every_shard_once_of_one_load() {
        let (a, b, c) = (info(0, 3), info(1, 3), info(2, 3));
        assert_eq!(check_complete(&[Some(&c), Some(&a), Some(&b)]), Ok(()));
        assert_eq!(check_complete(&[None, None]), Ok(()));
        let e = check_complete(&[Some(&a), Some(&c)]).unwrap_err();
        assert_eq!(e.to_string(), "shard 1 of 3 missing");
        let e = check_complete(&[Some(&a), Some(&b), Some(&b)]).unwrap_err();
        assert_eq!(
            e,
            ShardError::Duplicate {
                index: 1,
                first: 1,
                second: 2
            }
        );
        assert!(matches!(
            check_complete(&[Some(&a), None]),
            Err(ShardError::NotAShard { run: 1, shard: 0 })
        ));
        let mut other = b.clone();
        other.config_hash = "sha256:bb".into();
        assert!(matches!(
            check_complete(&[Some(&a), Some(&other), Some(&c)]),
            Err(ShardError::MixedConfig { other: 1, .. })
        ));
        let mut hist = c.clone();
        hist.histogram.significant_digits = 2;
        assert_eq!(
            check_complete(&[Some(&a), Some(&b), Some(&hist)]),
            Err(ShardError::MixedHistograms { other: 2 })
        );
        assert!(matches!(
            check_complete(&[Some(&a), Some(&info(1, 4))]),
            Err(ShardError::MixedCounts { other: 1, .. })
        ));
    }

    #[test]
    fn out_paths_expand_shard_and_shards() {
        let s = Shard { index: 2, count: 4 };
        assert_eq!(s.expand("r-{shard}-of-{shards}.json"), "r-2-of-4.json");
        assert_eq!(s.expand("plain.json"), "plain.json");
    }
}
