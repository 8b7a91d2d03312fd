//! The target as every check sees it (`Subject`): where it is, its
//! process, its answers alone (`Refs`), how long each step waits (`Pace`),
//! which checks are wanted and how to tell that its process exited.

use std::time::{Duration, Instant};

use super::catalogue::DEFECTS;
use super::probe::{Answer, Probe};

/// A file planted beside the served directory, with a token no served
/// file holds.
#[derive(Debug, Clone)]
pub struct Canary {
    /// Its name, in the served directory's parent.
    pub name: String,
    /// Its absolute path.
    pub path: String,
    pub token: String,
}

/// How long the checks wait at each kind of step.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// Watching a connection after an answer (extra bytes, a close).
    pub watch: Duration,
    /// Watching after a HEAD's head.
    pub short: Duration,
    /// An answer to a plain request.
    pub answer: Duration,
    /// Withholding a body announced with `Expect: 100-continue`.
    pub expect: Duration,
}

impl Pace {
    pub const FULL: Pace = Pace {
        watch: Duration::from_secs(1),
        short: Duration::from_millis(300),
        answer: Duration::from_secs(3),
        expect: Duration::from_millis(1500),
    };
    /// The pace of the check a sweep makes before measuring: about 1 s for
    /// a sound server.
    pub const QUICK: Pace = Pace {
        watch: Duration::from_millis(200),
        short: Duration::from_millis(100),
        answer: Duration::from_secs(1),
        expect: Duration::from_millis(500),
    };
}

/// The answers the path and the missing path get alone.
#[derive(Debug, Clone)]
pub struct Refs {
    pub path: Answer,
    pub missing: Answer,
    /// Asked twice, each gave the same bytes: bodies can be compared.
    pub stable: bool,
}

impl Refs {
    /// Whether `got` is the answer `alone` (its body too, when stable).
    pub fn matches(&self, got: &Answer, alone: &Answer) -> bool {
        got.status == alone.status && (!self.stable || got.body == alone.body)
    }
}

/// What to check and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// Only these ids (None: every one the families hold).
    pub only: Option<Vec<String>>,
    /// Only the framing and connection families, at `Pace::QUICK`.
    pub quick: bool,
    /// The whole check's time; families not begun by then are skipped.
    pub limit: Duration,
}

/// The target under check, as the checks see it.
pub struct Subject<'a> {
    pub probe: Probe,
    /// The root of its process tree, when loadlab started it.
    pub pid: Option<u32>,
    pub canary: Option<Canary>,
    pub refs: Refs,
    pub pace: Pace,
    pub stop: &'a (dyn Fn() -> bool + Sync),
    /// When the check's time runs out: long loops stop there.
    pub deadline: Instant,
    pub(super) only: Option<Vec<String>>,
    pub(super) quick: bool,
}

impl Subject<'_> {
    pub fn wants(&self, id: &str) -> bool {
        let family_ok = !self.quick || DEFECTS.iter().any(|d| d.id == id && d.family.quick());
        family_ok
            && self
                .only
                .as_ref()
                .map_or(true, |o| o.iter().any(|x| x == id))
    }

    pub fn out_of_time(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// How the server's process ended, once it has.
    pub fn exited(&self) -> Option<String> {
        let pid = self.pid?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        let state = stat
            .as_deref()
            .and_then(|s| s.rsplit(')').next())
            .and_then(|s| s.split_whitespace().next());
        match state {
            None => Some("process exited".into()),
            Some("Z" | "X") => Some("process exited".into()),
            _ => None,
        }
    }
}
