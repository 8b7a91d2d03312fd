//! The slow-client condition a sweep cell ran under (`sweep --slow`,
//! preset e6): which attack, if any, was held beside the measured client.
//! It sits below the jobs so raw.csv, the summary and the report can name
//! it; the lab maps it to bench's slow connections.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Which slow clients were held during a cell. `None` is the same client
/// alone: the row the others are paired with.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum SlowAttack {
    #[default]
    None,
    /// Slowloris: request heads that never end.
    Header,
    /// Request bodies trickled a byte at a time.
    Body,
    /// Large responses read a few bytes at a time.
    Read,
}

impl SlowAttack {
    pub const ALL: [SlowAttack; 4] = [
        SlowAttack::None,
        SlowAttack::Header,
        SlowAttack::Body,
        SlowAttack::Read,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SlowAttack::None => "none",
            SlowAttack::Header => "header",
            SlowAttack::Body => "body",
            SlowAttack::Read => "read",
        }
    }

    pub fn is_none(self) -> bool {
        self == SlowAttack::None
    }

    /// "none" or "header x2000" for tables and legends.
    pub fn label(self, conns: u64) -> String {
        match self {
            SlowAttack::None => "none".into(),
            a => format!("{} x{conns}", a.name()),
        }
    }
}

impl fmt::Display for SlowAttack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SlowAttack {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        SlowAttack::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| format!("--slow takes none, header, body or read, not '{s}'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_label_with_the_count() {
        for a in SlowAttack::ALL {
            assert_eq!(a.name().parse::<SlowAttack>(), Ok(a));
        }
        assert_eq!(SlowAttack::Header.label(2000), "header x2000");
        assert_eq!(SlowAttack::None.label(0), "none");
        assert!("slowloris"
            .parse::<SlowAttack>()
            .unwrap_err()
            .contains("'slowloris'"));
    }
}
