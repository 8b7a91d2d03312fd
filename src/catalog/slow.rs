//! The slow clients held beside the measured client: what `bench --slow`
//! holds, and the condition a sweep cell ran under (`sweep --slow`,
//! preset e6), where `none` is the client alone. One enum below the jobs,
//! so bench, raw.csv, the summary and the report name them alike.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Which slow clients were held. `None` is the client alone: the sweep's
/// row the others are paired with, and bench holding nothing.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum SlowKind {
    #[default]
    None,
    /// Slowloris: a request head that never ends, a header line a trickle.
    Header,
    /// A complete head announcing a body that then arrives a byte a trickle.
    Body,
    /// A request for a large response, read a few bytes a trickle.
    Read,
}

impl SlowKind {
    pub const ALL: [SlowKind; 4] = [
        SlowKind::None,
        SlowKind::Header,
        SlowKind::Body,
        SlowKind::Read,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SlowKind::None => "none",
            SlowKind::Header => "header",
            SlowKind::Body => "body",
            SlowKind::Read => "read",
        }
    }

    pub fn is_none(self) -> bool {
        self == SlowKind::None
    }

    /// "none" or "header x2000" for tables and legends.
    pub fn label(self, conns: u64) -> String {
        match self {
            SlowKind::None => "none".into(),
            a => format!("{} x{conns}", a.name()),
        }
    }
}

impl fmt::Display for SlowKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SlowKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        super::parse_named(&SlowKind::ALL, SlowKind::name, "slow-client kind", s)
            .map_err(|_| format!("--slow takes none, header, body or read, not '{s}'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_label_with_the_count() {
        for a in SlowKind::ALL {
            assert_eq!(a.name().parse::<SlowKind>(), Ok(a));
        }
        assert_eq!(SlowKind::Header.label(2000), "header x2000");
        assert_eq!(SlowKind::None.label(0), "none");
        assert!("slowloris"
            .parse::<SlowKind>()
            .unwrap_err()
            .contains("'slowloris'"));
    }
}
