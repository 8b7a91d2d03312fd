//! Violations: rules an answer broke that leave it answered (its status
//! line, head and announced body all arrived). Counted by kind with the
//! first example, apart from failures, so that a server with a small
//! framing bug is measured and told what to fix (`--strict` counts them
//! as failed instead).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::http::client::HeadFlaws;

/// A kind of violation, named as `loadlab check` names the defect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Violation {
    /// Bytes after the end of the body its framing announced (a body
    /// longer than its Content-Length, a CRLF appended after it).
    BytesAfterBody,
    /// A head line ending in LF without CR.
    BareLf,
    /// A `Date` that is not an IMF-fixdate.
    BadDate,
}

impl Violation {
    pub const ALL: [Violation; 3] = [
        Violation::BytesAfterBody,
        Violation::BareLf,
        Violation::BadDate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Violation::BytesAfterBody => "bytes-after-body",
            Violation::BareLf => "bare-lf",
            Violation::BadDate => "bad-date",
        }
    }

    /// The rule, and what to change, in one sentence.
    pub fn fix(self) -> &'static str {
        match self {
            Violation::BytesAfterBody => {
                "RFC 9112 section 6.3: the body ends where Content-Length says; send exactly that many bytes and nothing after them"
            }
            Violation::BareLf => {
                "RFC 9112 section 2.2: end every line of the head with CRLF (\\r\\n), not a bare LF"
            }
            Violation::BadDate => {
                "RFC 9110 section 5.6.7: send Date as an IMF-fixdate, e.g. 'Sun, 06 Nov 1994 08:49:37 GMT'"
            }
        }
    }

    /// The violations a head's flaws stand for.
    pub fn of_flaws(flaws: HeadFlaws) -> impl Iterator<Item = Violation> {
        [
            (HeadFlaws::BARE_LF, Violation::BareLf),
            (HeadFlaws::BAD_DATE, Violation::BadDate),
        ]
        .into_iter()
        .filter(move |&(f, _)| flaws.contains(f))
        .map(|(_, v)| v)
    }

    pub fn by_name(name: &str) -> Option<Violation> {
        Violation::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// How often one kind was seen, and its first example (escaped, cut).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Seen {
    pub count: u64,
    pub example: String,
}

/// Every kind seen in a run, by name.
pub type Violations = BTreeMap<String, Seen>;

/// Counts one `v`; the example is kept when it is the kind's first.
pub fn record(into: &mut Violations, v: Violation, example: Option<&str>) {
    let seen = into.entry(v.name().to_string()).or_default();
    seen.count = seen.count.saturating_add(1);
    if seen.example.is_empty() {
        if let Some(e) = example {
            seen.example = e.to_string();
        }
    }
}

/// Adds another thread's (or run's) violations: counts add up, the first
/// example stays.
pub fn merge(into: &mut Violations, other: &Violations) {
    for (k, s) in other {
        let mine = into.entry(k.clone()).or_default();
        mine.count = mine.count.saturating_add(s.count);
        if mine.example.is_empty() {
            mine.example.clone_from(&s.example);
        }
    }
}

/// The rule and fix of a kind by its name; empty for a kind this build
/// does not know (a merged file may name one).
pub fn fix_of(kind: &str) -> &'static str {
    Violation::by_name(kind).map_or("", Violation::fix)
}

/// `kind (n), kind (n)` for a one-line message.
pub fn summary(v: &Violations) -> String {
    let parts: Vec<String> = v
        .iter()
        .map(|(k, s)| format!("{k} ({})", s.count))
        .collect();
    parts.join(", ")
}

/// Answers that carried at least one violation are counted once each
/// per kind, so this is the total of kinds, not of answers.
pub fn total(v: &Violations) -> u64 {
    v.values().fold(0, |a, s| a.saturating_add(s.count))
}
