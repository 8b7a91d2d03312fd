//! `--fail-on` (bench and sweep): conditions that fail a run which did
//! measure something (exit 3), written `METRIC OP NUMBER[UNIT]` and
//! comma-separated; any one that holds is enough. Parsed by clap (a bad
//! expression is a usage error naming the bad part) and checked once the
//! report is out, against a bench result or each of a sweep's runs.

use std::fmt;

use crate::bench::result::BenchResult;
use crate::bench::stats::Summary;
use crate::bench::violations;
use crate::results::raw::RawRow;

/// What a condition looks at. Counts are requests; `errors` is every
/// request that did not end in a 2xx or 3xx answer (no answer at all, or
/// an answer with another status): `complete - ok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// ab's "Failed requests": connect, receive, length, exceptions.
    Failed,
    /// ab's "Non-2xx responses" (3xx included, as in ab).
    Non2xx,
    /// Answers that broke a rule of HTTP but counted as answered, summed
    /// over kinds (bench only: a sweep's rows do not carry them).
    Violations,
    Errors,
    /// 2xx/3xx answers / completed requests, 0 to 1.
    SuccessRatio,
    /// 2xx/3xx answers per second.
    Rps,
    P50,
    P90,
    P99,
    P999,
    Max,
}

/// How a metric's number is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Count,
    Ratio,
    Rate,
    Latency,
}

const METRICS: [(&str, Metric); 11] = [
    ("failed", Metric::Failed),
    ("non2xx", Metric::Non2xx),
    ("violations", Metric::Violations),
    ("errors", Metric::Errors),
    ("success_ratio", Metric::SuccessRatio),
    ("rps", Metric::Rps),
    ("p50", Metric::P50),
    ("p90", Metric::P90),
    ("p99", Metric::P99),
    ("p999", Metric::P999),
    ("max", Metric::Max),
];

impl Metric {
    fn kind(self) -> Kind {
        match self {
            Metric::Failed | Metric::Non2xx | Metric::Violations | Metric::Errors => Kind::Count,
            Metric::SuccessRatio => Kind::Ratio,
            Metric::Rps => Kind::Rate,
            _ => Kind::Latency,
        }
    }

    fn name(self) -> &'static str {
        METRICS
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("?", |(n, _)| n)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }

    /// Whether a larger value is the worse one (the one to name).
    fn wants_small(self) -> bool {
        matches!(self, Op::Gt | Op::Ge)
    }
}

/// Latency units and their size in milliseconds, the unit of every
/// latency loadlab reports.
const LATENCY_UNITS: [(&str, f64); 4] = [("us", 0.001), ("µs", 0.001), ("ms", 1.0), ("s", 1000.0)];

#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub metric: Metric,
    pub op: Op,
    /// In the metric's own unit: ms for latencies, 0-1 for the ratio.
    pub limit: f64,
    /// The latency unit as written, to print values in it; ms otherwise.
    unit: &'static str,
}

/// Every condition of one or more `--fail-on` flags.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Conditions(pub Vec<Condition>);

/// clap's value parser: the whole flag value, comma-separated.
pub fn parse(s: &str) -> Result<Conditions, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.iter().all(|p| p.is_empty()) {
        return Err("expected METRIC OP NUMBER[UNIT], e.g. 'failed>0,p99>10ms,rps<5000'".into());
    }
    parts
        .into_iter()
        .map(|p| parse_one(p).map_err(|why| format!("'{p}': {why}")))
        .collect::<Result<_, _>>()
        .map(Conditions)
}

fn parse_one(part: &str) -> Result<Condition, String> {
    if part.is_empty() {
        return Err("an empty condition (two commas in a row?)".into());
    }
    let name_end = part
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(part.len());
    let name = &part[..name_end];
    let metric = METRICS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, m)| m)
        .ok_or_else(|| {
            let names: Vec<&str> = METRICS.iter().map(|(n, _)| *n).collect();
            format!("unknown metric '{name}' (one of {})", names.join(", "))
        })?;
    let rest = part[name_end..].trim_start();
    let (op, rest) = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)]
        .into_iter()
        .find_map(|(sym, op)| rest.strip_prefix(sym).map(|r| (op, r)))
        .ok_or_else(|| format!("expected one of < <= > >= after '{name}'"))?;
    let rest = rest.trim();
    let num_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (num, unit) = (&rest[..num_end], rest[num_end..].trim());
    let value: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| format!("expected a number after '{}'", op.symbol()))?;
    let (limit, unit) = match (metric.kind(), unit) {
        (Kind::Latency, "") => {
            return Err("a latency needs a unit: us, ms or s (e.g. p99>10ms)".into())
        }
        (Kind::Latency, u) => {
            let &(unit, ms) = LATENCY_UNITS
                .iter()
                .find(|(n, _)| *n == u)
                .ok_or_else(|| format!("unknown latency unit '{u}' (use us, ms or s)"))?;
            (value * ms, unit)
        }
        (Kind::Ratio, "%") => (value / 100.0, ""),
        (Kind::Ratio, "") if value > 1.0 => {
            return Err("success_ratio is 0 to 1 (or a percentage, e.g. 99%)".into())
        }
        (Kind::Count, "") if value.fract() != 0.0 => {
            return Err(format!("{name} is a count of requests: a whole number"))
        }
        (_, "") => (value, ""),
        (_, u) => return Err(format!("{name} takes no unit (got '{u}')")),
    };
    Ok(Condition {
        metric,
        op,
        limit,
        unit,
    })
}

/// A number as people write it: no trailing zeros, at most `decimals`.
fn number(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    match s.contains('.') {
        true => s.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => s,
    }
}

impl Condition {
    fn scaled(&self, v: f64) -> String {
        match self.metric.kind() {
            Kind::Latency => {
                let per = LATENCY_UNITS
                    .iter()
                    .find(|(n, _)| *n == self.unit)
                    .map_or(1.0, |&(_, ms)| ms);
                format!("{} {}", number(v / per, 3), self.unit)
            }
            Kind::Rate => number(v, 1),
            _ => number(v, 3),
        }
    }

    /// "p99 = 12.3 ms > 10 ms": the condition with the value that made
    /// it hold.
    fn describe(&self, value: f64) -> String {
        format!(
            "{} = {} {} {}",
            self.metric.name(),
            self.scaled(value),
            self.op.symbol(),
            self.scaled(self.limit)
        )
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}",
            self.metric.name(),
            self.op.symbol(),
            self.scaled(self.limit).replace(' ', "")
        )
    }
}

/// The figures a condition can look at, from one bench run or one sweep
/// run. Latencies in ms; for an open-loop bench run they are measured from
/// the scheduled send time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Observed {
    pub failed: u64,
    pub non2xx: u64,
    pub violations: u64,
    pub complete: u64,
    /// Answers with a 2xx or 3xx status.
    pub ok: u64,
    pub rps: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Observed {
    pub fn of_bench(r: &BenchResult) -> Observed {
        let s = &r.stats;
        let l = Summary::of(s.latency.reported());
        Observed {
            failed: s.failed(),
            non2xx: s.non_2xx,
            violations: violations::total(&s.violations),
            complete: s.complete,
            ok: s.answered_ok(),
            rps: s.answered_ok() as f64 / r.seconds(),
            p50: l.p50,
            p90: l.p90,
            p99: l.p99,
            p999: l.p99_9,
            max: l.max,
        }
    }

    pub fn of_row(r: &RawRow) -> Observed {
        Observed {
            failed: r.failed,
            non2xx: r.non_2xx,
            violations: 0,
            complete: r.complete,
            ok: r.ok_responses,
            rps: r.ok_rps,
            p50: r.p50_ms,
            p90: r.p90_ms,
            p99: r.p99_ms,
            p999: r.p99_9_ms,
            max: r.p100_ms,
        }
    }

    fn value(&self, m: Metric) -> f64 {
        match m {
            Metric::Failed => self.failed as f64,
            Metric::Non2xx => self.non2xx as f64,
            Metric::Violations => self.violations as f64,
            Metric::Errors => self.complete.saturating_sub(self.ok) as f64,
            Metric::SuccessRatio if self.complete == 0 => 0.0,
            Metric::SuccessRatio => self.ok as f64 / self.complete as f64,
            Metric::Rps => self.rps,
            Metric::P50 => self.p50,
            Metric::P90 => self.p90,
            Metric::P99 => self.p99,
            Metric::P999 => self.p999,
            Metric::Max => self.max,
        }
    }
}

impl Conditions {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// All the conditions of several `--fail-on` flags.
    pub fn join(all: &[Conditions]) -> Conditions {
        Conditions(all.iter().flat_map(|c| c.0.iter().cloned()).collect())
    }

    /// Whether any condition looks at `m`.
    pub fn names(&self, m: Metric) -> bool {
        self.0.iter().any(|c| c.metric == m)
    }

    /// One line per condition that held for a bench run.
    pub fn held(&self, o: &Observed) -> Vec<String> {
        self.0
            .iter()
            .filter_map(|c| {
                let v = o.value(c.metric);
                c.op.holds(v, c.limit)
                    .then(|| format!("fail-on: {}", c.describe(v)))
            })
            .collect()
    }

    /// One line per condition that held for any measured run of a sweep
    /// (warm-up runs and runs that could not be made are not looked at),
    /// naming the run where it held worst and how many runs it held for.
    pub fn held_in_rows(&self, rows: &[RawRow]) -> Vec<String> {
        let measured: Vec<&RawRow> = rows
            .iter()
            .filter(|r| r.is_measured() && !r.warmup)
            .collect();
        let mut lines = Vec::new();
        for c in &self.0 {
            let hits: Vec<(f64, &RawRow)> = measured
                .iter()
                .map(|r| (Observed::of_row(r).value(c.metric), *r))
                .filter(|&(v, _)| c.op.holds(v, c.limit))
                .collect();
            let worst = hits.iter().copied().reduce(|a, b| {
                let b_worse = if c.op.wants_small() {
                    b.0 > a.0
                } else {
                    b.0 < a.0
                };
                if b_worse {
                    b
                } else {
                    a
                }
            });
            if let Some((v, r)) = worst {
                lines.push(format!(
                    "fail-on: {} in {} {} c={} ka={} round {} ({} of {} runs)",
                    c.describe(v),
                    r.target,
                    r.path,
                    r.concurrency,
                    if r.keepalive { "on" } else { "off" },
                    r.repeat,
                    hits.len(),
                    measured.len()
                ));
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> Condition {
        let mut c = parse(s).unwrap().0;
        assert_eq!(c.len(), 1, "{s}");
        c.remove(0)
    }

    #[test]
    fn good_expressions_parse_into_the_metric_unit() {
        let c = parse("failed>0, p99>10ms,rps<5000").unwrap().0;
        assert_eq!(c.len(), 3);
        assert_eq!(
            (c[0].metric, c[0].op, c[0].limit),
            (Metric::Failed, Op::Gt, 0.0)
        );
        assert_eq!(
            (c[1].metric, c[1].op, c[1].limit),
            (Metric::P99, Op::Gt, 10.0)
        );
        assert_eq!(
            (c[2].metric, c[2].op, c[2].limit),
            (Metric::Rps, Op::Lt, 5000.0)
        );
        assert_eq!(one("p50 >= 500us").limit, 0.5);
        assert_eq!(one("max<=2s").limit, 2000.0);
        assert_eq!(one("p999 > 1.5 ms").limit, 1.5);
        assert_eq!(one("success_ratio<0.99").limit, 0.99);
        assert_eq!(one("success_ratio<99%").limit, 0.99);
        assert_eq!(one("errors>=1").op, Op::Ge);
        assert_eq!(one("non2xx>5").metric, Metric::Non2xx);
        assert_eq!(one("P90>1s").metric, Metric::P90);
        assert_eq!(one("p99>10ms").to_string(), "p99>10ms");
    }

    #[test]
    fn bad_expressions_name_the_bad_part() {
        let err = |s: &str| parse(s).unwrap_err();
        assert!(
            err("p98>1ms").contains("unknown metric 'p98'"),
            "{}",
            err("p98>1ms")
        );
        assert!(err("failed>0,p99>10").starts_with("'p99>10': a latency needs a unit"));
        assert!(err("p99>10min").contains("unknown latency unit 'min'"));
        assert!(err("p99=10ms").contains("expected one of < <= > >= after 'p99'"));
        assert!(err("p99==10ms").contains("expected one of"));
        assert!(err("rps<").contains("expected a number after '<'"));
        assert!(err("rps<-5").contains("expected a number"));
        assert!(err("rps<5k").contains("rps takes no unit (got 'k')"));
        assert!(err("failed>0.5").contains("whole number"));
        assert!(err("failed>0ms").contains("takes no unit"));
        assert!(err("success_ratio<5").contains("0 to 1"));
        assert!(err("failed>0,,rps<1").contains("empty condition"));
        assert!(err("").contains("expected METRIC OP NUMBER"));
    }

    fn observed() -> Observed {
        Observed {
            failed: 2,
            non2xx: 3,
            violations: 7,
            complete: 100,
            ok: 95,
            rps: 4000.0,
            p50: 1.0,
            p90: 4.0,
            p99: 12.3,
            p999: 20.0,
            max: 31.0,
        }
    }

    #[test]
    fn conditions_that_hold_say_the_value_and_the_limit() {
        let c = parse("failed>0,p99>10ms,rps<5000,p50>2ms,errors>=5,success_ratio<0.96").unwrap();
        let held = c.held(&observed());
        assert_eq!(
            held,
            [
                "fail-on: failed = 2 > 0",
                "fail-on: p99 = 12.3 ms > 10 ms",
                "fail-on: rps = 4000 < 5000",
                "fail-on: errors = 5 >= 5",
                "fail-on: success_ratio = 0.95 < 0.96",
            ]
        );
        let us = parse("p90>3500us").unwrap().held(&observed());
        assert_eq!(us, ["fail-on: p90 = 4000 us > 3500 us"]);
        assert!(parse("failed>2,p99>1s")
            .unwrap()
            .held(&observed())
            .is_empty());
    }

    #[test]
    fn violations_is_a_count_condition() {
        let c = parse("violations>0").unwrap();
        assert!(c.names(Metric::Violations));
        assert_eq!(c.held(&observed()), ["fail-on: violations = 7 > 0"]);
        assert!(parse("violations>7").unwrap().held(&observed()).is_empty());
        assert!(parse("violations>0.5")
            .unwrap_err()
            .contains("whole number"));
    }

    #[test]
    fn a_sweep_condition_names_the_worst_run_and_counts_the_runs() {
        let row = |target: &str, p99: f64, warmup: bool| RawRow {
            target: target.into(),
            path: "/500B.html".into(),
            concurrency: 50,
            repeat: 2,
            p99_ms: p99,
            warmup,
            complete: 10,
            ok_responses: 10,
            ..RawRow::default()
        };
        let mut failed = row("url:http://e", 0.0, false);
        failed.set_failed("target did not start".into());
        let rows = [
            row("url:http://a", 3.0, false),
            row("url:http://b", 45.1, false),
            row("url:http://c", 11.0, false),
            row("url:http://d", 99.0, true),
            failed,
        ];
        let held = parse("p99>10ms,failed>0").unwrap().held_in_rows(&rows);
        assert_eq!(
            held,
            ["fail-on: p99 = 45.1 ms > 10 ms in url:http://b /500B.html c=50 ka=off round 2 (2 of 3 runs)"]
        );
    }
}
