//! Findings from the check a sweep made before its runs: each defect that
//! failed (or warned) in a target, with its evidence and fix, so a result
//! is read with its cause beside it.

use super::{Finding, Kind};
use crate::results::diagnosis::Diagnosis;

/// What each defect does to the numbers, where it changes them.
fn effect(id: &str) -> &'static str {
    match id {
        "bytes-after-body" => {
            " Its answers are counted as answered, with a violation; a kept-alive connection is closed after each."
        }
        "keepalive-ignored" => " Keep-alive runs of it pay a new connection per request.",
        "http10-not-closed" | "http10-keepalive-unconfirmed" | "no-length-no-close" => {
            " Runs of it may end in timeouts rather than answers."
        }
        "body-shorter-than-length" | "bad-chunked" | "bad-status-line" => {
            " Its answers fail: its requests/s counts none of them."
        }
        _ => "",
    }
}

fn sentences_of(d: &Diagnosis) -> Vec<Finding> {
    if let Some(why) = &d.unusable {
        return vec![Finding {
            kind: Kind::Defect,
            text: format!(
                "{}: the check before the runs could not run: {why}.",
                d.target
            ),
        }];
    }
    d.checks
        .iter()
        .filter(|c| c.verdict == "fail" || c.verdict == "warn")
        .map(|c| Finding {
            kind: Kind::Defect,
            text: format!(
                "{}: {} ({}): {}.{} Fix: {}.",
                d.target,
                c.id,
                c.verdict,
                c.evidence,
                effect(&c.id),
                c.fix
            ),
        })
        .collect()
}

/// One finding per defect found, target by target.
pub fn sentences(diagnoses: &[Diagnosis]) -> Vec<Finding> {
    diagnoses.iter().flat_map(sentences_of).collect()
}
