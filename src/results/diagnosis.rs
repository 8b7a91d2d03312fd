//! What a check found of one target, as a sweep keeps it in sweep.json
//! for the report: each check's id, verdict, evidence and fix, as text,
//! so the report reads it without importing check.

use serde::{Deserialize, Serialize};

/// One target's diagnosis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Diagnosis {
    /// The target's label, as in raw.csv.
    pub target: String,
    /// Why the target could not be checked at all (not a server).
    pub unusable: Option<String>,
    pub seconds: f64,
    pub checks: Vec<CheckLine>,
}

/// One check's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckLine {
    pub id: String,
    /// pass, warn, fail or skip.
    pub verdict: String,
    pub evidence: String,
    pub fix: String,
}

impl Diagnosis {
    /// The checks with this verdict.
    pub fn with<'a>(&'a self, verdict: &'a str) -> impl Iterator<Item = &'a CheckLine> + 'a {
        self.checks.iter().filter(move |c| c.verdict == verdict)
    }

    /// "2 fail (bytes-after-body, pipelining-broken), 1 warn (bad-date),
    /// 9 pass", or why it could not be checked.
    pub fn headline(&self) -> String {
        if let Some(why) = &self.unusable {
            return format!("not checked: {why}");
        }
        let mut parts = Vec::new();
        for v in ["fail", "warn", "skip"] {
            let ids: Vec<&str> = self.with(v).map(|c| c.id.as_str()).collect();
            if !ids.is_empty() {
                parts.push(format!("{} {v} ({})", ids.len(), ids.join(", ")));
            }
        }
        parts.push(format!("{} pass", self.with("pass").count()));
        parts.join(", ")
    }
}
