//! Which target the comparisons are made against, which of its
//! configurations a given configuration is compared with, and which cell
//! without slow clients a cell beside them is paired with. Pure functions
//! of target labels and run configurations; the ratios themselves are
//! `stats::ratio::paired` over the rounds.

use crate::catalog::slow::SlowKind;
use crate::results::config::RunConfig;

/// Whether a target label names nginx (`nginx`, `nginx:workers=2`).
fn is_nginx(target: &str) -> bool {
    target == "nginx" || target.starts_with("nginx:")
}

/// The baseline among `targets` (in the order the data has them): the
/// wanted one when it is among them, else nginx when present, else the
/// first. `None` only when there is no target at all.
pub fn choose(targets: &[&str], wanted: Option<&str>) -> Option<String> {
    if let Some(t) = wanted.and_then(|w| resolve(targets, w).ok()) {
        return Some(t);
    }
    targets
        .iter()
        .find(|t| is_nginx(t))
        .or_else(|| targets.first())
        .map(|t| t.to_string())
}

/// The target `wanted` names: the label itself, or the one target whose
/// label it starts (`nginx` for `nginx:workers=2`, `event-loop` for
/// `model:event-loop`). The error names the targets there are.
pub fn resolve(targets: &[&str], wanted: &str) -> Result<String, String> {
    if targets.contains(&wanted) {
        return Ok(wanted.to_string());
    }
    let names = |t: &str| {
        let t = t.strip_prefix("model:").unwrap_or(t);
        t == wanted || t.split(':').next() == Some(wanted)
    };
    let hits: Vec<&&str> = targets.iter().filter(|t| names(t)).collect();
    match hits.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(format!(
            "--baseline {wanted} is not one of the targets: {}",
            targets.join(", ")
        )),
        many => Err(format!(
            "--baseline {wanted} names more than one target: {}",
            many.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Whether `b` measured what `a` did, with the target changed: same
/// experiment, path, CPUs, load, keep-alive and concurrency. Workers are
/// left out because they belong to the target (nginx:workers=2 against
/// model:event-loop with its one loop); `counterpart` prefers equal ones.
fn same_but_target(a: &RunConfig, b: &RunConfig) -> bool {
    RunConfig {
        target: String::new(),
        workers: 0,
        ..a.clone()
    } == RunConfig {
        target: String::new(),
        workers: 0,
        ..b.clone()
    }
}

/// The index in `keys` of the baseline's configuration that `k` is
/// compared with: the same everything but target, with equal workers when
/// the baseline has them (E4 varies a pool's size), else the only one.
pub fn counterpart(keys: &[&RunConfig], k: &RunConfig, baseline: &str) -> Option<usize> {
    let candidates: Vec<usize> = (0..keys.len())
        .filter(|&i| keys[i].target == baseline && same_but_target(keys[i], k))
        .collect();
    candidates
        .iter()
        .copied()
        .find(|&i| keys[i].workers == k.workers)
        .or(match candidates.as_slice() {
            [one] => Some(*one),
            _ => None,
        })
}

/// The configuration of the same client with no slow clients held.
pub fn without_slow(k: &RunConfig) -> RunConfig {
    RunConfig {
        slow: SlowKind::None,
        slow_conns: 0,
        ..k.clone()
    }
}

/// The index in `keys` of the cell a slow-client cell `k` is paired with:
/// the same everything, with no slow clients. None for a cell that has
/// none itself, or whose none cell was not measured.
pub fn alone(keys: &[&RunConfig], k: &RunConfig) -> Option<usize> {
    if k.slow.is_none() {
        return None;
    }
    let base = without_slow(k);
    keys.iter().position(|c| **c == base)
}

#[cfg(test)]
mod tests {
    use super::*;

    // model subset: labels of two kinds of model target beside nginx and a
    // URL, as a sweep names them.
    const TARGETS: [&str; 4] = [
        "model:event-loop",
        "model:thread-pool:workers=4",
        "nginx:workers=2",
        "url:http://127.0.0.1:9/",
    ];

    #[test]
    fn nginx_then_first_then_wanted() {
        assert_eq!(choose(&TARGETS, None).as_deref(), Some("nginx:workers=2"));
        assert_eq!(
            choose(&TARGETS[..2], None).as_deref(),
            Some("model:event-loop")
        );
        assert_eq!(
            choose(&TARGETS, Some("thread-pool")).as_deref(),
            Some("model:thread-pool:workers=4")
        );
        // A wanted target absent from this experiment: the default rule.
        assert_eq!(
            choose(&TARGETS[..2], Some("nginx")).as_deref(),
            Some("model:event-loop")
        );
        assert_eq!(choose(&[], None), None);
    }

    #[test]
    fn names_resolve_or_say_what_there_is() {
        assert_eq!(resolve(&TARGETS, "nginx").unwrap(), "nginx:workers=2");
        assert_eq!(resolve(&TARGETS, "event-loop").unwrap(), "model:event-loop");
        assert_eq!(
            resolve(&TARGETS, "url:http://127.0.0.1:9/").unwrap(),
            "url:http://127.0.0.1:9/"
        );
        let e = resolve(&TARGETS, "apache").unwrap_err();
        assert!(e.contains("not one of the targets") && e.contains("nginx:workers=2"));
        let e = resolve(&["model:a:workers=1", "model:a:workers=2"], "a").unwrap_err();
        assert!(e.contains("more than one"), "{e}");
    }

    #[test]
    fn counterparts_match_all_but_target() {
        let k = |target: &str, workers: u64, c: u64| RunConfig {
            target: target.into(),
            workers,
            concurrency: c,
            ..RunConfig::default()
        };
        let keys = [k("nginx", 2, 1), k("nginx", 2, 10), k("a", 1, 10)];
        let refs: Vec<&RunConfig> = keys.iter().collect();
        assert_eq!(counterpart(&refs, &k("a", 1, 10), "nginx"), Some(1));
        assert_eq!(counterpart(&refs, &k("a", 1, 5), "nginx"), None);
        // A pool size the baseline also ran is compared with that size.
        let pool = [k("p", 1, 1), k("p", 2, 1)];
        let refs: Vec<&RunConfig> = pool.iter().collect();
        assert_eq!(counterpart(&refs, &k("q", 2, 1), "p"), Some(1));
        assert_eq!(counterpart(&refs, &k("q", 3, 1), "p"), None);
    }
}
