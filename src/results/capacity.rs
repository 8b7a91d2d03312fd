//! capacity.json: what a sweep's capacity search found, beside raw.csv.
//! Per target and setting, the highest offered rate served within the
//! objective (an interval over interleaved rounds), or a bound when the
//! load generator, not the server, ran out first; and every probe made on
//! the way, for the latency-against-rate chart. The lab writes it; the
//! report reads it when present.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::raw::RawRow;

/// File name of the capacity results inside a results directory.
pub const CAPACITY_JSON: &str = "capacity.json";
/// capacity.json's `schema`.
pub const CAPACITY_SCHEMA: &str = "loadlab-capacity/1";

/// A latency objective: a percentile of each run below a limit, as in
/// `p99<10ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    /// 50, 90, 95, 99 or 99.9.
    pub percentile: f64,
    pub limit_ms: f64,
}

impl Default for Objective {
    /// p99 < 10 ms: a page that feels instant, served under load.
    fn default() -> Objective {
        Objective {
            percentile: 99.0,
            limit_ms: 10.0,
        }
    }
}

impl Objective {
    /// `p99<10ms`, `p50<2ms`, `p99.9<50ms` (a limit in ms, s or µs/us).
    pub fn parse(s: &str) -> Result<Objective, String> {
        let bad = || {
            format!("--slo '{s}': give a percentile and a limit, e.g. 'p99<10ms' (p50, p90, p95, p99 or p99.9)")
        };
        let (p, limit) = s.trim().split_once('<').ok_or_else(bad)?;
        let percentile: f64 = p
            .trim()
            .strip_prefix('p')
            .ok_or_else(bad)?
            .parse()
            .map_err(|_| bad())?;
        if ![50.0, 90.0, 95.0, 99.0, 99.9].contains(&percentile) {
            return Err(bad());
        }
        let limit = limit.trim();
        let split = limit
            .find(|c: char| c.is_alphabetic() || c == 'µ')
            .ok_or_else(bad)?;
        let v: f64 = limit[..split].parse().map_err(|_| bad())?;
        let limit_ms = match &limit[split..] {
            "ms" => v,
            "s" => v * 1000.0,
            "us" | "µs" => v / 1000.0,
            _ => return Err(bad()),
        };
        if !(limit_ms.is_finite() && limit_ms > 0.0) {
            return Err(bad());
        }
        Ok(Objective {
            percentile,
            limit_ms,
        })
    }

    /// The run's latency at the objective's percentile (ms).
    pub fn latency_ms(&self, r: &RawRow) -> f64 {
        // In tenths, so the match is on integers.
        match (self.percentile * 10.0).round() as u32 {
            500 => r.p50_ms,
            900 => r.p90_ms,
            950 => r.p95_ms,
            999 => r.p99_9_ms,
            _ => r.p99_ms,
        }
    }

    /// "p99 < 10 ms".
    pub fn text(&self) -> String {
        format!("p{} < {} ms", self.percentile, self.limit_ms)
    }
}

/// What a search found for one target and setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The server's capacity: `rate` is its estimate with an interval.
    Capacity,
    /// The load generator was busy at the first failing rate: `rate` is
    /// the last rate passed, a lower bound, not the server's capacity.
    ClientLimit,
    /// Even the lowest rate tried failed: `rate` is that rate, an upper
    /// bound.
    Below,
    /// Every rate up to the search's ceiling passed: `rate` is the
    /// ceiling, a lower bound.
    Above,
}

impl Outcome {
    /// A bound, not a measured capacity: never ranked against another.
    pub fn is_bound(self) -> bool {
        self != Outcome::Capacity
    }
}

/// One target's capacity in one setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    pub target: String,
    pub workers: u64,
    pub cpus: u64,
    pub path: String,
    pub keepalive: bool,
    pub concurrency: u64,
    pub outcome: Outcome,
    /// Requests/s: the capacity's estimate (mean over the rounds), or the
    /// bound the outcome names.
    pub rate: f64,
    /// 95 % interval of `rate` over the rounds; empty for a bound.
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
    /// Each round's estimate, in round order (paired across targets).
    pub rounds: Vec<f64>,
    /// The search's final bracket: the highest rate passed and the lowest
    /// that failed twice.
    pub last_pass: Option<f64>,
    pub first_fail: Option<f64>,
    /// The busiest load thread's share of the first failing run (%).
    pub client_busy_pct: Option<f64>,
    /// Every run made, in order.
    pub probes: Vec<Probe>,
}

impl Capacity {
    /// `rate` with its interval, as the tables show it: "12,000 (11,500 to
    /// 12,400)/s", "≥ 60,000 (client limit)", "< 1,000".
    /// "keep-alive on, c=50": the setting the search held the target in.
    pub fn setting(&self) -> String {
        format!(
            "keep-alive {}, c={}",
            if self.keepalive { "on" } else { "off" },
            self.concurrency
        )
    }

    pub fn text(&self) -> String {
        let n = |v: f64| thousands(v.round() as u64);
        match self.outcome {
            Outcome::Capacity => match (self.ci95_low, self.ci95_high) {
                (Some(lo), Some(hi)) => format!("{} ({} to {})", n(self.rate), n(lo), n(hi)),
                _ => n(self.rate),
            },
            Outcome::ClientLimit => format!("≥ {} (client limit)", n(self.rate)),
            Outcome::Below => format!("< {}", n(self.rate)),
            Outcome::Above => format!("≥ {} (ceiling)", n(self.rate)),
        }
    }
}

/// "12,345".
fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// One run of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// Offered requests/s.
    pub rate: f64,
    /// 0 for the search, 1.. for the rounds that give the interval.
    pub round: u64,
    pub passed: bool,
    /// Why it failed (empty when it passed).
    pub why: String,
    pub achieved_rate: f64,
    /// Latency at the objective's percentile (ms).
    pub latency_ms: f64,
    pub failed: u64,
    pub client_busy_pct: f64,
    /// Server CPU per answered request (µs); empty when not watched.
    pub server_cpu_us_per_req: Option<f64>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityFile {
    pub schema: String,
    pub objective: Objective,
    /// Seconds each probe lasted.
    pub run_s: f64,
    pub results: Vec<Capacity>,
    /// The rate the sweep's cells were then offered (the bare run: half
    /// the lowest capacity), if any.
    pub common_rate: Option<f64>,
}

impl CapacityFile {
    /// The settings searched, each once, in the order results name them.
    pub fn settings(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.results.iter().map(Capacity::setting) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }
}

/// Writes capacity.json whole: a report rendered meanwhile never reads
/// half of it.
pub fn write(dir: &Path, f: &CapacityFile) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(f)? + "\n";
    super::whole::write_whole(dir, CAPACITY_JSON, text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_and_bad_ones_say_the_form() {
        assert_eq!(Objective::parse("p99<10ms").unwrap(), Objective::default());
        let o = Objective::parse(" p99.9 < 0.5s ").unwrap();
        assert_eq!((o.percentile, o.limit_ms), (99.9, 500.0));
        assert_eq!(Objective::parse("p50<800us").unwrap().limit_ms, 0.8);
        for bad in [
            "p98<10ms", "99<10ms", "p99>10ms", "p99<10", "p99<0ms", "p99<10h",
        ] {
            assert!(
                Objective::parse(bad).unwrap_err().contains("'p99<10ms'"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_bound_reads_as_a_bound() {
        let mut c = Capacity {
            target: "t".into(),
            workers: 1,
            cpus: 1,
            path: "/".into(),
            keepalive: true,
            concurrency: 50,
            outcome: Outcome::ClientLimit,
            rate: 64000.0,
            ci95_low: None,
            ci95_high: None,
            rounds: vec![],
            last_pass: Some(64000.0),
            first_fail: Some(128000.0),
            client_busy_pct: Some(97.0),
            probes: vec![],
        };
        assert_eq!(c.text(), "≥ 64,000 (client limit)");
        (c.outcome, c.rate, c.ci95_low, c.ci95_high) =
            (Outcome::Capacity, 1900.0, Some(1850.0), Some(1950.0));
        assert_eq!(c.text(), "1,900 (1,850 to 1,950)");
        assert!(!c.outcome.is_bound() && Outcome::Below.is_bound());
    }
}
