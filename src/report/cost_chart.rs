//! Server CPU per request at equal load drawn: for every setting run at an
//! offered rate (the bare run's common rate, a `--rate` sweep's rates),
//! one panel of bars, a bar per target with its 95 % interval over rounds.
//! At one offered rate every target serves the same requests/s, so what
//! each request cost the server is what tells them apart.

use super::axis::spans;
use super::bars::{self, Bar, BarPanel, BarSpec, Bound};
use super::charts::Chart;
use super::num::fixed;
use super::summary::{Group, Status, SummaryRow, SweepSummary};
use crate::results::config::RunConfig;
use crate::stats::Interval;

/// The chart's file under charts/.
pub const FILE: &str = "cpu-at-rate.svg";

/// "keep-alive on, 2000/s offered, c=50" (with the experiment when the
/// summary has several).
fn title(k: &RunConfig, experiments: bool) -> String {
    let mut t = format!(
        "keep-alive {}, {} offered, c={}",
        if k.keepalive { "on" } else { "off" },
        k.rate_label(),
        k.concurrency
    );
    if experiments {
        t = format!("{}, {t}", k.experiment);
    }
    if k.path != "/" {
        t.push_str(&format!(", {}", k.path));
    }
    t
}

/// One bar: the mean of the rounds' µs per request, with its interval,
/// and the cell's status when it is not ok (client-bound, noisy, ...).
fn bar(g: &Group, r: &SummaryRow, colors: &[String]) -> Option<Bar> {
    let v: Vec<f64> = g.cpu_us_by_round().into_iter().map(|x| x.1).collect();
    if v.is_empty() {
        return None;
    }
    let i = Interval::of(&v);
    let mut text = match i.ci95() {
        Some(_) => format!("{} ± {} µs", fixed(i.mean, 1), fixed(i.half, 1)),
        None => format!("{} µs (1 round)", fixed(i.mean, 1)),
    };
    if r.status != Status::Ok {
        text.push_str(&format!(" ({})", r.status.word()));
    }
    Some(Bar {
        label: g.key.target.clone(),
        value: i.mean,
        ci: i.ci95(),
        bound: Bound::Value,
        color: colors.iter().position(|t| *t == g.key.target).unwrap_or(0),
        tip: format!(
            "{}: {text} of server CPU per request over {} round{}",
            g.key.target,
            v.len(),
            if v.len() == 1 { "" } else { "s" }
        ),
        text,
    })
}

/// The chart, or None when no setting ran two targets or more at an
/// offered rate with their CPU watched.
pub fn chart(s: &SweepSummary, colors: &[String]) -> Option<Chart> {
    let mut settings: Vec<RunConfig> = Vec::new();
    let mut panels: Vec<Vec<Bar>> = Vec::new();
    for (g, r) in s.groups.iter().zip(&s.rows) {
        if g.key.rate.is_none() {
            continue;
        }
        let Some(b) = bar(g, r, colors) else { continue };
        let k = RunConfig {
            target: String::new(),
            workers: 0,
            ..g.key.clone()
        };
        match settings.iter().position(|x| *x == k) {
            Some(i) => panels[i].push(b),
            None => {
                settings.push(k);
                panels.push(vec![b]);
            }
        }
    }
    let experiments = s.experiments.len() > 1;
    let panels: Vec<BarPanel> = settings
        .iter()
        .zip(panels)
        .filter(|(_, bars)| bars.len() >= 2)
        .map(|(k, bars)| BarPanel {
            title: title(k, experiments),
            bars,
        })
        .collect();
    if panels.is_empty() {
        return None;
    }
    let spec = BarSpec {
        title: "Server CPU per request at equal offered load (µs)".into(),
        x_label: "server CPU per request (µs, user + system)".into(),
        log: spans(
            panels.iter().flat_map(|p| p.bars.iter().map(|b| b.value)),
            30.0,
        ),
        panels,
    };
    Some(Chart {
        experiment: String::new(),
        file: FILE.into(),
        title: spec.title.clone(),
        svg: bars::svg(&spec),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary::summarize;
    use crate::results::raw::RawRow;

    fn run(target: &str, round: u64, cpu_ms: f64, client_bound: bool) -> RawRow {
        RawRow {
            run_id: round,
            experiment: "sweep".into(),
            target: target.into(),
            path: "/".into(),
            concurrency: 50,
            duration_s: 1.0,
            keepalive: true,
            rate: Some(1000.0),
            achieved_rate: Some(1000.0),
            repeat: round,
            time_taken_s: 1.0,
            complete: 1000,
            ok_responses: 1000,
            ok_rps: 1000.0,
            server_rss_peak_kb: 4000,
            server_cpu_ms: cpu_ms,
            client_bound,
            ..RawRow::default()
        }
    }

    #[test]
    fn a_bar_says_when_its_cell_cannot_be_trusted() {
        let raw: Vec<RawRow> = (1..=3)
            .flat_map(|i| [run("a", i, 15.0, false), run("b", i, 30.0, i == 2)])
            .collect();
        let s = summarize(&raw);
        let c = chart(&s, &["a".into(), "b".into()]).expect("a chart");
        assert!(c.svg.contains("30.0 ± 0.0 µs (client-bound)"), "{}", c.svg);
        assert!(c.svg.contains("15.0 ± 0.0 µs</text>"), "{}", c.svg);
    }
}
