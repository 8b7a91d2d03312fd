//! The targets a sweep is not measuring, watched while it measures another:
//! one that burns CPU with no load of its own (a thread spinning after its
//! client closed) takes the CPUs the measured run needed, so that run is
//! marked disturbed and the burner named.

use std::time::Instant;

use crate::proc::monitor::{CpuMark, IDLE_CPU_LIMIT_PCT};

/// Less CPU than this (ms) over a run is a server finishing what its own
/// last run left (threads joining, closes), not burning.
const NOTICED_MS: f64 = 10.0;

/// The other targets' CPU clocks when a run began.
pub struct IdleWatch {
    began: Instant,
    marks: Vec<(String, u32, CpuMark)>,
}

impl IdleWatch {
    /// Marks every target in `others` (label, pid of the tree loadlab
    /// started).
    pub fn start<'a>(others: impl IntoIterator<Item = (&'a str, u32)>) -> IdleWatch {
        IdleWatch {
            began: Instant::now(),
            marks: others
                .into_iter()
                .map(|(label, pid)| (label.to_string(), pid, CpuMark::read(pid)))
                .collect(),
        }
    }

    /// The targets that were busy while idle over the run, as
    /// `label (N % of a core)` joined by "; "; None when none was.
    pub fn finish(self) -> Option<String> {
        let wall_ms = self.began.elapsed().as_secs_f64() * 1e3;
        let busy: Vec<String> = self
            .marks
            .iter()
            .filter_map(|(label, pid, mark)| {
                let ms = mark.used_ns_until(&CpuMark::read(*pid)) as f64 / 1e6;
                let pct = 100.0 * ms / wall_ms.max(1e-3);
                (ms >= NOTICED_MS && pct > IDLE_CPU_LIMIT_PCT)
                    .then(|| format!("{label} ({pct:.0} % of a core)"))
            })
            .collect();
        (!busy.is_empty()).then(|| busy.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spinning_process_is_named_and_a_sleeping_one_is_not() {
        let mut spin = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let mut sleep = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let w = IdleWatch::start([("spinner", spin.id()), ("sleeper", sleep.id())]);
        std::thread::sleep(std::time::Duration::from_millis(300));
        let said = w.finish();
        for c in [&mut spin, &mut sleep] {
            let _ = c.kill();
            let _ = c.wait();
        }
        let said = said.expect("the spinner was busy");
        assert!(said.starts_with("spinner ("), "{said}");
        assert!(!said.contains("sleeper"), "{said}");
    }
}
