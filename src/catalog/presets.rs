//! The reference experiments (EXPERIMENTS.md) as one registry: each
//! preset's name, the question it answers and which job runs it. The lab
//! and stress build its plan; the report reads which preset a results
//! directory holds from the `experiment` column, never from a name
//! prefix of its own.

use std::fmt;
use std::str::FromStr;

/// Which job runs a preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresetKind {
    /// `loadlab sweep`: bench runs against targets, rows in raw.csv.
    Sweep,
    /// `loadlab stress`: the file-transfer matrix, rows in stress.csv.
    Stress,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Preset {
    E1,
    E2,
    E3,
    E4,
    E5,
    E6,
}

/// Appended to a preset's name in the `experiment` column by `--quick`.
const QUICK_SUFFIX: &str = "-quick";

impl Preset {
    pub const ALL: [Preset; 6] = [
        Preset::E1,
        Preset::E2,
        Preset::E3,
        Preset::E4,
        Preset::E5,
        Preset::E6,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::E1 => "e1",
            Preset::E2 => "e2",
            Preset::E3 => "e3",
            Preset::E4 => "e4",
            Preset::E5 => "e5",
            Preset::E6 => "e6",
        }
    }

    pub fn kind(self) -> PresetKind {
        match self {
            Preset::E2 => PresetKind::Stress,
            _ => PresetKind::Sweep,
        }
    }

    /// The question the experiment answers, in one sentence.
    pub fn question(self) -> &'static str {
        match self {
            Preset::E1 => "Under ab's load, how do one event loop, a thread per connection and every other model compare as concurrency grows?",
            Preset::E2 => "Uploading and downloading large files, how do a thread pool and a process pool of 1, 5 or 50 workers serve 1, 5 or 50 clients?",
            Preset::E3 => "With ten thousand clients at once, how do event-driven servers compare with nginx in time per request, CPU and memory?",
            Preset::E4 => "How does a thread pool's size interact with the cores the server may use?",
            Preset::E5 => "How do requests/s and latency change with concurrency, with keep-alive on and off?",
            Preset::E6 => "While 2,000 slow clients (slowloris, slow bodies, slow readers) are held, what happens to a normal client's p99 and failures on each model?",
        }
    }

    /// The `experiment` label a run of this preset records.
    pub fn label(self, quick: bool) -> String {
        if quick {
            format!("{}{QUICK_SUFFIX}", self.name())
        } else {
            self.name().to_string()
        }
    }

    /// The preset an `experiment` label records (`e1`, `e1-quick`), or
    /// `None` for a plain sweep or the default comparison.
    pub fn of_label(label: &str) -> Option<Preset> {
        let name = label.strip_suffix(QUICK_SUFFIX).unwrap_or(label);
        name.parse().ok()
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        super::parse_named(&Preset::ALL, Preset::name, "preset", s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_their_preset_with_or_without_quick() {
        for p in Preset::ALL {
            assert_eq!(Preset::of_label(&p.label(false)), Some(p));
            assert_eq!(Preset::of_label(&p.label(true)), Some(p));
            assert_eq!(p.name().parse::<Preset>(), Ok(p));
        }
        assert_eq!(Preset::of_label("sweep"), None);
        assert_eq!(Preset::of_label("default"), None);
        assert_eq!(Preset::of_label("e10"), None);
        assert!("e9"
            .parse::<Preset>()
            .unwrap_err()
            .contains("e1, e2, e3, e4, e5, e6"));
    }
}
