//! `--fail-on` for compare: relative thresholds on B/A, written
//! `METRIC<-N%` or `METRIC>+N%` and comma-separated, e.g.
//! `rps<-5%,p99>+10%,cpu>+5%`. A change counts only when its whole 95 %
//! interval is past the threshold, so noise never fails a build.

use super::metrics::CellResult;
use super::model::Metric;
use super::render::{ratio_label, target_label, where_label};

/// One threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gate {
    pub metric: Metric,
    /// True for `<` (fails when B falls below), false for `>`.
    pub below: bool,
    /// The threshold as a change: -5 % is -0.05.
    pub change: f64,
}

/// Parses `rps<-5%,p99>+10%`; the error names the bad part.
pub fn parse(s: &str) -> Result<Vec<Gate>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(parse_one)
        .collect::<Result<Vec<_>, _>>()
        .and_then(|v| {
            if v.is_empty() {
                Err(format!("no condition in '{s}'"))
            } else {
                Ok(v)
            }
        })
}

fn parse_one(p: &str) -> Result<Gate, String> {
    let bad = || {
        format!(
            "bad condition '{p}' (use METRIC<-N% or METRIC>+N%, METRIC one of {})",
            Metric::ALL.map(|m| m.name()).join(", ")
        )
    };
    let (at, below) = match (p.find('<'), p.find('>')) {
        (Some(i), None) => (i, true),
        (None, Some(i)) => (i, false),
        _ => return Err(bad()),
    };
    let metric = Metric::parse(p[..at].trim()).ok_or_else(bad)?;
    let pct: f64 = p[at + 1..]
        .trim()
        .strip_suffix('%')
        .and_then(|n| n.trim().parse().ok())
        .filter(|n: &f64| n.is_finite())
        .ok_or_else(bad)?;
    Ok(Gate {
        metric,
        below,
        change: pct / 100.0,
    })
}

impl Gate {
    fn text(&self) -> String {
        format!(
            "{}{}{:+}%",
            self.metric.name(),
            if self.below { "<" } else { ">" },
            self.change * 100.0
        )
    }
}

/// One line for each gate a cell's whole interval is past.
pub fn held(gates: &[Gate], cells: &[CellResult<'_>], shown: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for c in cells {
        for g in gates {
            let Some(m) = c.metrics.iter().find(|m| m.metric == g.metric) else {
                continue;
            };
            let Some((lo, hi)) = m.ratio.and_then(|r| r.ci95) else {
                continue;
            };
            let limit = 1.0 + g.change;
            if (g.below && hi < limit) || (!g.below && lo > limit) {
                let cell = [target_label(&c.pair), where_label(&c.pair, shown)];
                out.push(format!(
                    "--fail-on {}: {}: {} {}",
                    g.text(),
                    cell.join(" ").trim_end(),
                    m.metric.label(),
                    ratio_label(m.ratio)
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_parse_or_name_the_bad_part() {
        let g = parse("rps<-5%, p99>+10%,cpu>+5%").unwrap();
        assert_eq!(g.len(), 3);
        assert_eq!((g[0].metric, g[0].below), (Metric::Rps, true));
        assert!((g[0].change + 0.05).abs() < 1e-12);
        assert_eq!(g[1].text(), "p99>+10%");
        assert!(parse("rps<-5").unwrap_err().contains("'rps<-5'"));
        assert!(parse("speed<5%").is_err());
        assert!(parse("").is_err());
    }
}
