//! The sweep's progress on stderr: a bar on a terminal, one line per run
//! in a log, the notes a sweep has for its user, and after the runs what
//! the client-bound and cpu-saturated flags meant.

use std::io::Write as _;

use crate::lab::execute::SweepEvent;
use crate::lab::record::ROUGH_CPU_BELOW_S;
use crate::results::raw::RawRow;

/// SweepProgress on stderr: a bar on a terminal, one line per run otherwise
/// (a CI log), neither with -q. Notes (a target skipped or not started)
/// are printed in every case.
pub struct SweepProgress {
    pub bar: Option<indicatif::ProgressBar>,
    lines: bool,
    total: usize,
    done: usize,
}

impl SweepProgress {
    pub fn new(quiet: bool) -> SweepProgress {
        use std::io::IsTerminal;
        let terminal = std::io::stderr().is_terminal();
        let bar = (!quiet && terminal).then(|| {
            let bar = indicatif::ProgressBar::new(0);
            if let Ok(s) = indicatif::ProgressStyle::with_template(
                "{bar:40} run {pos}/{len}  eta {eta}  {msg}",
            ) {
                bar.set_style(s);
            }
            bar
        });
        SweepProgress {
            bar,
            lines: !quiet && !terminal,
            total: 0,
            done: 0,
        }
    }

    pub fn note(&self, text: &str) {
        let line = format!("loadlab: {text}");
        match &self.bar {
            Some(b) => b.println(line),
            None => say(&line),
        }
    }

    pub fn event(&mut self, e: SweepEvent) {
        match e {
            SweepEvent::Note(text) => self.note(text),
            SweepEvent::Planned { runs, already_done } => {
                self.total = runs;
                if let Some(b) = &self.bar {
                    b.set_length(runs as u64);
                }
                let before = if already_done > 0 {
                    format!(" ({already_done} already in raw.csv, not made again)")
                } else {
                    String::new()
                };
                if self.bar.is_some() || self.lines || already_done > 0 {
                    self.note(&format!(
                        "{runs} run{} to make{before}",
                        if runs == 1 { "" } else { "s" }
                    ));
                }
            }
            SweepEvent::Run(row) => {
                self.done += 1;
                let rate = row.rate.map_or(String::new(), |r| format!(" rate={r}/s"));
                let what = format!(
                    "{} {}{rate} c={} ka={} r{}{}",
                    row.target,
                    row.path,
                    row.concurrency,
                    if row.keepalive { "on" } else { "off" },
                    row.repeat,
                    flags(row)
                );
                if let Some(b) = &self.bar {
                    b.inc(1);
                    b.set_message(what);
                } else if self.lines {
                    let result = if row.is_measured() {
                        format!("{:.0} requests/s", row.ok_rps)
                    } else {
                        format!("error: {}", row.error)
                    };
                    say(&format!(
                        "loadlab: run {}/{} {what}: {result}",
                        self.done, self.total
                    ));
                }
            }
            SweepEvent::Dropped { runs, row } => {
                self.total = self.total.saturating_sub(runs);
                if let Some(b) = &self.bar {
                    b.set_length(self.total as u64);
                }
                self.note(&format!(
                    "{}: {} ({runs} run{} dropped)",
                    row.target,
                    row.error,
                    if runs == 1 { "" } else { "s" }
                ));
            }
        }
    }
}

impl SweepProgress {
    /// After the runs: what the flags in the progress lines mean and what
    /// to do, once, when any run had one.
    pub fn explain_flags(&self, rows: &[RawRow]) {
        // A run with no 2xx answer measured nothing a flag could qualify.
        let count = |f: fn(&RawRow) -> bool| {
            rows.iter()
                .filter(|r| r.is_measured() && r.ok_responses > 0 && f(r))
                .count()
        };
        let (client, saturated) = (count(|r| r.client_bound), count(|r| r.cpu_saturated));
        let runs = count(|_| true);
        let short = count(RawRow::rate_short);
        if short > 0 {
            self.note(&format!(
                "{short} of {runs} runs were rate-short: under {:.0} % of the offered rate went out, so their latencies describe a lighter load than asked",
                crate::stats::RATE_KEPT * 100.0
            ));
        }
        if client > 0 {
            self.note(&format!(
                "{client} of {runs} runs were client-bound: a load thread was busy 90 % of the run, so the client, not the server, set the rate (give more --threads, split the CPUs with --cpus, or load from another machine)"
            ));
        }
        if saturated > 0 {
            self.note(&format!(
                "{saturated} of {runs} runs were cpu-saturated: the CPUs client and server share were 90 % busy, so they measure the pair, not the server (split the CPUs with --cpus, or load from another machine)"
            ));
        }
    }
}

/// The flags of a run for a progress line: " [client-bound]" and the like.
fn flags(row: &RawRow) -> String {
    let mut f = Vec::new();
    if row.rate_short() {
        f.push(format!(
            "rate-short: {:.0} of {} requests/s",
            row.achieved_rate.unwrap_or(0.0),
            row.rate.unwrap_or(0.0)
        ));
    }
    if row.client_bound {
        f.push("client-bound".to_string());
    }
    if row.cpu_saturated {
        f.push("cpu-saturated".to_string());
    }
    if row.is_measured() && row.time_taken_s < ROUGH_CPU_BELOW_S {
        f.push(format!(
            "CPU rough: {:.0} ms run",
            row.time_taken_s * 1000.0
        ));
    }
    if f.is_empty() {
        String::new()
    } else {
        format!(" [{}]", f.join(", "))
    }
}

/// A line on stderr. A closed stderr (piped into `head`) must not stop a
/// sweep halfway, so write errors are ignored rather than panicking as
/// `eprintln!` would.
pub fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}
