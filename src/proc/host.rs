//! The host's conditions around a measurement, read from /proc: load
//! average, CPU time stolen by a hypervisor, other processes busy beside
//! the run, and how busy given CPUs were between two readings. A number
//! measured on a busy host says less than it seems to; these say so.

use std::collections::HashMap;
use std::time::Duration;

/// A process counts as busy beside the run above this % of one CPU.
pub const BUSY_PROCESS_PCT: f64 = 10.0;
/// How long `sample` watches the host: long enough for clock ticks
/// (10 ms) to resolve a 10 % process, short enough not to delay a sweep.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(200);
/// Longest command line kept for a busy process.
const COMMAND_CHARS: usize = 80;

/// CPU time counters of one CPU (or all of them), in clock ticks, from a
/// `cpu` line of /proc/stat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub total: u64,
    /// Neither idle nor waiting for IO (stolen time counts: the run could
    /// not have had it).
    pub busy: u64,
    pub steal: u64,
}

impl CpuTicks {
    /// One `cpu`/`cpuN` line's numbers: user nice system idle iowait irq
    /// softirq steal (guest time is already inside user and nice).
    fn parse(fields: &[u64]) -> CpuTicks {
        let f = |i: usize| fields.get(i).copied().unwrap_or(0);
        let total: u64 = (0..8).map(f).sum();
        CpuTicks {
            total,
            busy: total - f(3) - f(4),
            steal: f(7),
        }
    }

    fn since(self, earlier: CpuTicks) -> CpuTicks {
        CpuTicks {
            total: self.total.saturating_sub(earlier.total),
            busy: self.busy.saturating_sub(earlier.busy),
            steal: self.steal.saturating_sub(earlier.steal),
        }
    }
}

/// /proc/stat's CPU counters: the all-CPU line, and one per CPU number.
#[derive(Debug, Clone, Default)]
pub struct CpuStat {
    pub all: CpuTicks,
    pub per_cpu: HashMap<usize, CpuTicks>,
}

impl CpuStat {
    pub fn read() -> CpuStat {
        let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        CpuStat::parse(&text)
    }

    fn parse(text: &str) -> CpuStat {
        let mut out = CpuStat::default();
        for line in text.lines().filter(|l| l.starts_with("cpu")) {
            let mut words = line.split_whitespace();
            let name = words.next().unwrap_or_default();
            let nums: Vec<u64> = words.filter_map(|w| w.parse().ok()).collect();
            let ticks = CpuTicks::parse(&nums);
            match name.strip_prefix("cpu").filter(|n| !n.is_empty()) {
                None => out.all = ticks,
                Some(n) => {
                    if let Ok(cpu) = n.parse() {
                        out.per_cpu.insert(cpu, ticks);
                    }
                }
            }
        }
        out
    }

    /// How busy `cpus` were together between `self` and `later`, in % of
    /// their time (100 = every one of them busy throughout). 0 for no CPUs.
    pub fn busy_pct(&self, later: &CpuStat, cpus: &[usize]) -> f64 {
        let (mut busy, mut total) = (0u64, 0u64);
        for c in cpus {
            if let (Some(a), Some(b)) = (self.per_cpu.get(c), later.per_cpu.get(c)) {
                let d = b.since(*a);
                busy += d.busy;
                total += d.total;
            }
        }
        pct(busy, total)
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64 * 100.0
    }
}

/// A process busy beside the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Busy {
    pub pid: u32,
    pub command: String,
    /// % of one CPU over the sampling interval.
    pub cpu_pct: f64,
}

/// The host over one sampling interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conditions {
    pub loadavg: [f64; 3],
    pub steal_pct: f64,
    /// Busiest first.
    pub busy: Vec<Busy>,
}

/// Watches the host for `interval`; processes in `ours` (loadlab and its
/// targets) are not counted as busy beside the run.
pub fn sample(interval: Duration, ours: &[u32]) -> Conditions {
    let stat0 = CpuStat::read();
    let procs0 = process_ticks();
    let t0 = std::time::Instant::now();
    std::thread::sleep(interval);
    let stat1 = CpuStat::read();
    let procs1 = process_ticks();
    let secs = t0.elapsed().as_secs_f64().max(1e-3);
    let d = stat1.all.since(stat0.all);
    let tick = ticks_per_second();
    let mut busy: Vec<Busy> = procs1
        .iter()
        .filter(|(pid, _)| !ours.contains(pid))
        .filter_map(|(&pid, &t1)| {
            let used = t1.checked_sub(*procs0.get(&pid)?)?;
            let cpu_pct = used as f64 / tick / secs * 100.0;
            (cpu_pct > BUSY_PROCESS_PCT).then(|| Busy {
                pid,
                command: command_of(pid),
                cpu_pct,
            })
        })
        .collect();
    busy.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct));
    Conditions {
        loadavg: loadavg(),
        steal_pct: pct(d.steal, d.total),
        busy,
    }
}

fn loadavg() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut v = text.split_whitespace().filter_map(|w| w.parse().ok());
    [0; 3].map(|_| v.next().unwrap_or(0.0))
}

/// utime + stime (clock ticks, every thread, living and exited) of every
/// process, by pid.
fn process_ticks() -> HashMap<u32, u64> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let f = stat_fields(&stat);
            // utime and stime are fields 14 and 15; `f` starts at field 3.
            let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
            Some((pid, n(11)? + n(12)?))
        })
        .collect()
}

/// Clock ticks per second, the unit of /proc's CPU times.
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The fields of a /proc/PID/stat line after the command name (which may
/// hold spaces and parentheses): field 3 (state) first.
pub fn stat_fields(stat: &str) -> Vec<&str> {
    stat.rfind(')')
        .and_then(|i| stat.get(i + 2..))
        .map(|rest| rest.split_whitespace().collect())
        .unwrap_or_default()
}

/// The command line of `pid`, shortened; its name when it has none (a
/// kernel thread).
fn command_of(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut cmd = String::from_utf8_lossy(&raw)
        .split('\0')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if cmd.is_empty() {
        cmd = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .unwrap_or_default()
            .trim()
            .to_string();
    }
    if cmd.chars().count() > COMMAND_CHARS {
        cmd = cmd.chars().take(COMMAND_CHARS - 1).collect::<String>() + "…";
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 0 50 800 50 0 0 0 0 0\n\
                        cpu0 60 0 20 400 20 0 0 0 0 0\n\
                        cpu1 40 0 30 400 30 0 0 0 0 0\n\
                        intr 1 2 3\n";

    #[test]
    fn busy_is_everything_but_idle_and_iowait() {
        let a = CpuStat::parse(STAT);
        assert_eq!(a.per_cpu.len(), 2);
        assert_eq!(a.all.total, 1000);
        assert_eq!(a.all.busy, 150);
        let b = CpuStat::parse(
            "cpu  0 0 0 0 0 0 0 0\ncpu0 110 0 20 400 20 0 0 0\ncpu1 40 0 30 450 30 0 0 10\n",
        );
        // cpu0: 50 busy of 50; cpu1: 10 of 60, all stolen (time the
        // run could not have, so not idle either).
        assert_eq!(a.busy_pct(&b, &[0]), 100.0);
        assert!((a.busy_pct(&b, &[1]) - 10.0 / 60.0 * 100.0).abs() < 1e-9);
        assert!((a.busy_pct(&b, &[0, 1]) - 60.0 / 110.0 * 100.0).abs() < 1e-9);
        assert_eq!(a.busy_pct(&b, &[]), 0.0, "no CPUs shared: never busy");
        assert_eq!(b.per_cpu[&1].since(a.per_cpu[&1]).steal, 10);
    }

    #[test]
    fn a_spinning_process_is_seen_and_our_own_are_not() {
        let spinner = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("spawn sh");
        let pid = spinner.id();
        let seen = sample(SAMPLE_INTERVAL, &[]);
        let ignored = sample(SAMPLE_INTERVAL, &[pid]);
        let mut spinner = spinner;
        let _ = spinner.kill();
        let _ = spinner.wait();
        let found = seen.busy.iter().find(|b| b.pid == pid).expect("spinner");
        assert!(found.cpu_pct > BUSY_PROCESS_PCT, "{found:?}");
        assert!(found.command.contains("while"), "{found:?}");
        assert!(ignored.busy.iter().all(|b| b.pid != pid));
        assert!(seen.loadavg.iter().all(|l| *l >= 0.0));
        assert!((0.0..=100.0).contains(&seen.steal_pct));
    }
}
