//! What one check concluded (`Finding`) and what a whole check of a
//! target did (`CheckReport`): the verdicts, their evidence, and the exit
//! status they call for.

use std::time::Duration;

use serde::Serialize;

use super::catalogue::{defect, Defect, Weight};

/// A check's answer. `Skip` (it could not be run here) never counts as a
/// pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Warn,
    Fail,
    Skip,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
            Verdict::Skip => "skip",
        }
    }
}

/// One check's verdict with its evidence: what was sent and what came
/// back, escaped and cut.
#[derive(Debug, Clone)]
pub struct Finding {
    pub defect: &'static Defect,
    pub verdict: Verdict,
    pub evidence: String,
    /// Why a defect is expected of this target (the iterative model's
    /// one connection at a time), or why a check was skipped.
    pub note: Option<String>,
}

impl Finding {
    fn of(id: &str, verdict: Verdict, evidence: String) -> Finding {
        Finding {
            defect: defect(id).unwrap_or_else(|| panic!("unknown check id {id}")),
            verdict,
            evidence,
            note: None,
        }
    }

    pub fn pass(id: &str, evidence: impl Into<String>) -> Finding {
        Finding::of(id, Verdict::Pass, evidence.into())
    }

    /// The defect was found: `fail`, or `warn` for a defect that only
    /// warns.
    pub fn found(id: &str, evidence: impl Into<String>) -> Finding {
        let f = Finding::of(id, Verdict::Fail, evidence.into());
        match f.defect.weight {
            Weight::Fail => f,
            Weight::Warn => Finding {
                verdict: Verdict::Warn,
                ..f
            },
        }
    }

    pub fn skip(id: &str, why: impl Into<String>) -> Finding {
        Finding::of(id, Verdict::Skip, why.into())
    }

    /// `found` when `defective`, else `pass`, with the same evidence.
    pub fn judge(id: &str, defective: bool, evidence: impl Into<String>) -> Finding {
        if defective {
            Finding::found(id, evidence)
        } else {
            Finding::pass(id, evidence)
        }
    }
}

/// Counts of each verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
    pub skip: usize,
}

/// Everything one check of a target found.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// The target as given (`model:event-loop`, `url:http://...`).
    pub target: String,
    /// Where it was reached, with the path checked.
    pub url: String,
    pub findings: Vec<Finding>,
    pub elapsed: Duration,
    /// Set when the target stopped being a server while checked (its
    /// process exited), or never answered at all.
    pub unusable: Option<String>,
    /// Ctrl-C ended the check early.
    pub interrupted: bool,
}

impl CheckReport {
    pub fn tally(&self) -> Tally {
        let mut t = Tally::default();
        for f in &self.findings {
            match f.verdict {
                Verdict::Pass => t.pass += 1,
                Verdict::Warn => t.warn += 1,
                Verdict::Fail => t.fail += 1,
                Verdict::Skip => t.skip += 1,
            }
        }
        t
    }

    pub fn finding(&self, id: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.defect.id == id)
    }

    /// The ids that failed.
    pub fn failed(&self) -> Vec<&'static str> {
        self.findings
            .iter()
            .filter(|f| f.verdict == Verdict::Fail)
            .map(|f| f.defect.id)
            .collect()
    }
}
