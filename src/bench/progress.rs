//! What a run shows on stderr while it goes: ab's heartbeats ("Completed N
//! requests" every tenth of the run, then "Finished N requests") unless -q,
//! and on a terminal a bar with the live requests/s, mean latency and
//! failed requests. It reads the load threads' counters once a tick, so
//! the hot path does nothing for it beyond storing three counters.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use super::engine::ThreadCounters;
use super::BenchConfig;

/// ab prints heartbeats only for runs of more than this many requests.
pub const HEARTBEAT_MIN_REQUESTS: u64 = 150;
/// ab prints a heartbeat every tenth of the run, but never more often
/// than every this many requests.
pub const HEARTBEAT_MIN_STEP: u64 = 100;
/// ab's request count for a run limited by time alone (-t without -n):
/// its heartbeats then come every tenth of this.
pub const AB_TIMED_REQUESTS: u64 = 50_000;
/// The live figures describe this much of the latest run time, so they
/// follow changes without jumping at every tick.
pub const LIVE_WINDOW: Duration = Duration::from_secs(1);

/// What the run shows while it goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgressMode {
    /// A bar with live figures (stderr is a terminal and no -q).
    pub bar: bool,
    /// ab's heartbeat lines (no -q).
    pub heartbeats: bool,
}

impl ProgressMode {
    /// Nothing at all (a lab's runs, `-q`).
    pub const NONE: ProgressMode = ProgressMode {
        bar: false,
        heartbeats: false,
    };
}

/// How many requests apart ab's heartbeats come for this run, if it
/// prints any: every tenth of the requests, at least 100 apart, for runs
/// of more than 150 (ab counts 50,000 for a run limited by time alone).
pub fn heartbeat_step(requests: Option<u64>) -> Option<u64> {
    let n = requests.unwrap_or(AB_TIMED_REQUESTS);
    (n > HEARTBEAT_MIN_REQUESTS).then(|| (n / 10).max(HEARTBEAT_MIN_STEP))
}

/// One reading of every thread's counters.
#[derive(Debug, Clone, Copy)]
struct Reading {
    at: Instant,
    done: u64,
    failed: u64,
    latency_us: u64,
}

/// The progress display of one run, driven by the run's watcher thread.
pub(super) struct Display<'a> {
    counters: &'a [ThreadCounters],
    bar: Option<ProgressBar>,
    /// Requests between heartbeats (None: no heartbeats).
    step: Option<u64>,
    /// The next heartbeat's request count.
    next_beat: u64,
    /// The start of the live window.
    window: Reading,
    /// Requests limit the run (the bar counts them), not time.
    by_requests: bool,
    started: Instant,
}

impl<'a> Display<'a> {
    pub(super) fn new(
        cfg: &BenchConfig,
        mode: ProgressMode,
        counters: &'a [ThreadCounters],
        started: Instant,
    ) -> Self {
        let step = heartbeat_step(cfg.requests).filter(|_| mode.heartbeats);
        let mut d = Display {
            counters,
            bar: mode.bar.then(|| progress_bar(cfg)),
            step,
            next_beat: step.unwrap_or(0),
            window: Reading {
                at: started,
                done: 0,
                failed: 0,
                latency_us: 0,
            },
            by_requests: cfg.requests.is_some(),
            started,
        };
        d.window = d.read();
        d
    }

    fn read(&self) -> Reading {
        let sum = |f: fn(&ThreadCounters) -> u64| {
            self.counters.iter().map(f).fold(0u64, u64::wrapping_add)
        };
        Reading {
            at: Instant::now(),
            done: sum(|c| c.done.load(Ordering::Relaxed)),
            failed: sum(|c| c.failed.load(Ordering::Relaxed)),
            latency_us: sum(|c| c.latency_us.load(Ordering::Relaxed)),
        }
    }

    /// Prints a line above the bar (or plainly without one).
    fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    /// ab's "Completed N requests" for each step passed since the last.
    fn heartbeats(&mut self, done: u64) {
        let Some(step) = self.step else { return };
        while self.next_beat <= done {
            self.say(&format!("Completed {} requests", self.next_beat));
            self.next_beat += step;
        }
    }

    /// Reads the counters: heartbeats, and the bar with its live figures.
    pub(super) fn tick(&mut self) {
        let now = self.read();
        self.heartbeats(now.done);
        let Some(bar) = &self.bar else { return };
        let span = now.at.saturating_duration_since(self.window.at);
        if span >= LIVE_WINDOW {
            bar.set_message(live_figures(&self.window, &now));
            self.window = now;
        }
        if self.by_requests {
            bar.set_position(now.done);
        } else {
            let ms = self.started.elapsed().as_millis();
            bar.set_position(u64::try_from(ms).unwrap_or(u64::MAX));
        }
    }

    /// After the run: the last heartbeats, the bar cleared, and ab's
    /// "Finished N requests".
    pub(super) fn finish(mut self) {
        let done = self.read().done;
        self.heartbeats(done);
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if self.step.is_some() {
            eprintln!("Finished {done} requests");
        }
    }
}

/// The bar's message: requests/s, mean latency and failed requests over
/// the window from `from` to `to`, as oha and hey show them while running.
fn live_figures(from: &Reading, to: &Reading) -> String {
    let secs = to.at.saturating_duration_since(from.at).as_secs_f64();
    let done = to.done.wrapping_sub(from.done);
    let failed = to.failed.wrapping_sub(from.failed);
    let answered = done.saturating_sub(failed);
    let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
    let mean = match answered {
        0 => "-".to_string(),
        n => format!(
            "{:.2}",
            to.latency_us.wrapping_sub(from.latency_us) as f64 / n as f64 / 1000.0
        ),
    };
    format!(
        "{rate:.0} req/s, mean latency {mean} ms, {} failed in all",
        to.failed
    )
}

fn progress_bar(cfg: &BenchConfig) -> ProgressBar {
    use indicatif::{ProgressDrawTarget, ProgressStyle};
    let (len, template) = match (cfg.requests, cfg.duration) {
        (Some(n), _) => (n, "{bar:30} {pos}/{len} requests  {msg}  eta {eta}"),
        (None, Some(d)) => (
            u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
            "{bar:30} {msg}  {elapsed} of the time limit",
        ),
        (None, None) => (0, "{pos}"),
    };
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.set_message("measuring");
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeats_come_where_abs_do() {
        assert_eq!(heartbeat_step(Some(150)), None, "150 or fewer: none");
        assert_eq!(heartbeat_step(Some(151)), Some(100), "at least 100 apart");
        assert_eq!(heartbeat_step(Some(1000)), Some(100));
        assert_eq!(heartbeat_step(Some(25_000)), Some(2_500), "a tenth");
        assert_eq!(heartbeat_step(None), Some(5_000), "-t alone: 50,000");
    }

    #[test]
    fn live_figures_cover_the_window() {
        let t0 = Instant::now();
        let from = Reading {
            at: t0,
            done: 100,
            failed: 1,
            latency_us: 50_000,
        };
        let to = Reading {
            at: t0 + Duration::from_secs(2),
            done: 2100,
            failed: 3,
            latency_us: 50_000 + 1998 * 1500,
        };
        assert_eq!(
            live_figures(&from, &to),
            "1000 req/s, mean latency 1.50 ms, 3 failed in all"
        );
        let idle = Reading { at: t0, ..from };
        assert_eq!(
            live_figures(&from, &idle),
            "0 req/s, mean latency - ms, 1 failed in all"
        );
    }
}
