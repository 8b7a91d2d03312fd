//! Counts a server's syscalls by kind and its context switches over one
//! run, with perf stat's syscall tracepoints in counting mode (not ptrace:
//! strace stops the server at every call and changes what it measures).
//! perf attaches to every process of the tree, its threads and the
//! threads and children they start later (perf's counters are
//! inherited), starts disabled, and is enabled and disabled over perf's
//! control fifo around the measured window, each step acknowledged, so the
//! counts cover the run and nothing before or after it.

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::results::accounting::{Counts, SyscallKind};

/// How long perf may take to attach, answer a command or exit.
const PERF_WAIT: Duration = Duration::from_secs(5);

/// Syscalls by kind. Names absent on this architecture (or kernel) are
/// left out when the events are listed; `Other` is the total less these.
const SYSCALLS: &[(&str, SyscallKind)] = &[
    ("read", SyscallKind::Reads),
    ("readv", SyscallKind::Reads),
    ("pread64", SyscallKind::Reads),
    ("recvfrom", SyscallKind::Reads),
    ("recvmsg", SyscallKind::Reads),
    ("recvmmsg", SyscallKind::Reads),
    ("write", SyscallKind::Writes),
    ("writev", SyscallKind::Writes),
    ("pwrite64", SyscallKind::Writes),
    ("sendto", SyscallKind::Writes),
    ("sendmsg", SyscallKind::Writes),
    ("sendmmsg", SyscallKind::Writes),
    ("sendfile64", SyscallKind::Writes),
    ("splice", SyscallKind::Writes),
    ("epoll_wait", SyscallKind::EpollWait),
    ("epoll_pwait", SyscallKind::EpollWait),
    ("epoll_pwait2", SyscallKind::EpollWait),
    ("io_uring_enter", SyscallKind::IoUringEnter),
    ("accept", SyscallKind::Accept),
    ("accept4", SyscallKind::Accept),
    ("close", SyscallKind::Close),
    ("futex", SyscallKind::Futex),
    ("clone", SyscallKind::CloneExit),
    ("clone3", SyscallKind::CloneExit),
    ("fork", SyscallKind::CloneExit),
    ("vfork", SyscallKind::CloneExit),
    ("exit", SyscallKind::CloneExit),
    ("exit_group", SyscallKind::CloneExit),
];

/// Every syscall entered, whatever its kind.
const TOTAL: &str = "raw_syscalls:sys_enter";
const SWITCHES: &str = "context-switches";
const TRACEFS_SYSCALLS: &str = "/sys/kernel/tracing/events/syscalls";

/// The events to count: the tracepoints this kernel has, the total and
/// context switches.
fn events() -> Vec<String> {
    let mut out: Vec<String> = SYSCALLS
        .iter()
        .map(|(name, _)| format!("sys_enter_{name}"))
        .filter(|e| Path::new(TRACEFS_SYSCALLS).join(e).is_dir())
        .map(|e| format!("syscalls:{e}"))
        .collect();
    out.push(TOTAL.into());
    out.push(SWITCHES.into());
    out
}

/// Why this host cannot count a server's syscalls, with how to enable it;
/// None when it can. Tried once per process.
pub fn unavailable() -> Option<&'static str> {
    static WHY: OnceLock<Option<String>> = OnceLock::new();
    WHY.get_or_init(probe).as_deref()
}

fn probe() -> Option<String> {
    if !Path::new(TRACEFS_SYSCALLS).is_dir() {
        return Some(format!(
            "no syscall tracepoints at {TRACEFS_SYSCALLS} (as root: mount -t tracefs nodev /sys/kernel/tracing)"
        ));
    }
    let out = Command::new("perf")
        .args(["stat", "-x,", "-e", "syscalls:sys_enter_close", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    match out {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Some("perf is not installed (Debian: apt-get install linux-perf)".into())
        }
        Err(e) => Some(format!("perf could not be run: {e}")),
        Ok(o) if o.status.success() => None,
        Ok(o) => {
            let paranoid =
                std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
            // SAFETY: geteuid has no preconditions.
            let root = unsafe { libc::geteuid() } == 0;
            let said = String::from_utf8_lossy(&o.stderr);
            let first = said.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            Some(match paranoid.trim().parse::<i32>() {
                Ok(p) if p > -1 && !root => format!(
                    "perf_event_paranoid is {p} and loadlab is not root (as root: sysctl kernel.perf_event_paranoid=-1)"
                ),
                _ => format!("perf stat failed: {}", first.trim()),
            })
        }
    }
}

/// perf stat attached to a process tree, counting while enabled.
pub struct Counter {
    perf: Child,
    dir: tempfile::TempDir,
    ctl: std::fs::File,
    ack: std::fs::File,
}

impl Counter {
    /// Attaches to `pids` (each process's threads with it) and enables
    /// the counters once perf has opened them. Call right before the
    /// load starts.
    pub fn start(pids: &[u32]) -> Result<Counter, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("no temp dir for perf: {e}"))?;
        let (ctl_path, ack_path) = (dir.path().join("ctl"), dir.path().join("ack"));
        for p in [&ctl_path, &ack_path] {
            nix::unistd::mkfifo(
                p,
                nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
            )
            .map_err(|e| format!("cannot make perf's control fifo: {e}"))?;
        }
        let list: Vec<String> = pids.iter().map(u32::to_string).collect();
        let err = std::fs::File::create(dir.path().join("err")).map_err(|e| e.to_string())?;
        let perf = Command::new("perf")
            .args(["stat", "-x,", "--delay", "-1", "-e", &events().join(",")])
            .args(["-p", &list.join(",")])
            .arg("--control")
            .arg(format!(
                "fifo:{},{}",
                ctl_path.display(),
                ack_path.display()
            ))
            .arg("-o")
            .arg(dir.path().join("out"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            // Its own group: a Ctrl-C meant for the sweep must not end the
            // count before the run's row is written.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start perf: {e}"))?;
        let ack = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&ack_path)
            .map_err(|e| e.to_string())?;
        let mut c = Counter {
            perf,
            dir,
            ctl: std::fs::File::open("/dev/null").map_err(|e| e.to_string())?,
            ack,
        };
        c.ctl = c.open_ctl(&ctl_path)?;
        c.command("enable")?;
        Ok(c)
    }

    /// The control fifo's writing end, once perf reads it; perf's own
    /// error when it exits first.
    fn open_ctl(&mut self, path: &Path) -> Result<std::fs::File, String> {
        let until = Instant::now() + PERF_WAIT;
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path)
            {
                Ok(f) => return Ok(f),
                Err(_) if Instant::now() < until && self.running() => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return Err(self.failure("perf did not open its control fifo")),
            }
        }
    }

    fn running(&mut self) -> bool {
        matches!(self.perf.try_wait(), Ok(None))
    }

    /// perf's first line on stderr, or `fallback`.
    fn failure(&self, fallback: &str) -> String {
        let said = std::fs::read_to_string(self.dir.path().join("err")).unwrap_or_default();
        match said.lines().map(str::trim).find(|l| !l.is_empty()) {
            Some(l) => format!("perf: {l}"),
            None => fallback.to_string(),
        }
    }

    /// Sends one control command and waits for perf's acknowledgement.
    fn command(&mut self, cmd: &str) -> Result<(), String> {
        self.ctl
            .write_all(format!("{cmd}\n").as_bytes())
            .map_err(|e| self.failure(&format!("perf's control fifo: {e}")))?;
        let until = Instant::now() + PERF_WAIT;
        let mut got = Vec::new();
        while !got.windows(3).any(|w| w == b"ack") {
            let fd = self.ack.as_fd();
            let mut fds = [nix::poll::PollFd::new(fd, nix::poll::PollFlags::POLLIN)];
            let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(50u16));
            let mut buf = [0u8; 64];
            match self.ack.read(&mut buf) {
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(format!("perf's ack fifo: {e}")),
            }
            if Instant::now() >= until || !self.running() {
                return Err(self.failure(&format!("perf did not acknowledge {cmd}")));
            }
        }
        Ok(())
    }

    /// Disables the counters, ends perf and reads what it counted. Call
    /// right after the load ends.
    pub fn finish(mut self) -> Result<Counts, String> {
        self.command("disable")?;
        let pid = nix::unistd::Pid::from_raw(self.perf.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let until = Instant::now() + PERF_WAIT;
        while self.running() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        if self.running() {
            return Err("perf did not exit after the run".into());
        }
        let text = std::fs::read_to_string(self.dir.path().join("out"))
            .map_err(|e| format!("perf's counts: {e}"))?;
        Ok(parse(&text))
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        if self.running() {
            let _ = self.perf.kill();
        }
        let _ = self.perf.wait();
    }
}

/// perf stat's CSV (`-x,`: count, unit, event, ...) as counts by kind; an
/// event perf did not count is 0 and named in `not_counted`.
pub fn parse(text: &str) -> Counts {
    let mut c = Counts::default();
    let mut named = 0u64;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split(',').collect();
        let (Some(count), Some(event)) = (f.first(), f.get(2)) else {
            continue;
        };
        let Ok(n) = count.trim().parse::<u64>() else {
            if !event.is_empty() {
                c.not_counted.push(event.to_string());
            }
            continue;
        };
        if *event == TOTAL {
            c.total = n;
        } else if *event == SWITCHES {
            c.ctx_switches = n;
        } else if let Some(kind) = event
            .strip_prefix("syscalls:sys_enter_")
            .and_then(|s| SYSCALLS.iter().find(|(name, _)| *name == s))
            .map(|(_, k)| *k)
        {
            c.by_kind[kind as usize] += n;
            named += n;
        }
    }
    c.other = c.total.saturating_sub(named);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_csv_is_read_by_kind_and_uncounted_events_are_named() {
        let text = "# started on Sat Nov 28 13:31:09 2026\n\n\
            400,,syscalls:sys_enter_read,1196661910,100.00,334.701,K/sec\n\
            100,,syscalls:sys_enter_recvfrom,1196661910,100.00,,\n\
            450,,syscalls:sys_enter_sendto,1196661910,100.00,,\n\
            <not counted>,,syscalls:sys_enter_futex,0,100.00,,\n\
            2,,syscalls:sys_enter_clone3,1,100.00,,\n\
            1000,,raw_syscalls:sys_enter,1196669675,100.00,650.843,K/sec\n\
            62,,context-switches,1196675305,100.00,51.877,K/sec\n";
        let c = parse(text);
        assert_eq!(c.by_kind[SyscallKind::Reads as usize], 500);
        assert_eq!(c.by_kind[SyscallKind::Writes as usize], 450);
        assert_eq!(c.by_kind[SyscallKind::CloneExit as usize], 2);
        assert_eq!((c.total, c.other, c.ctx_switches), (1000, 48, 62));
        assert_eq!(c.not_counted, vec!["syscalls:sys_enter_futex"]);
    }
}
