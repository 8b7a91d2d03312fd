//! Sampled call stacks of a process tree over a window: `perf record` on
//! the tree's processes (cpu-clock, which needs no hardware counters, and
//! DWARF unwinding, since release builds keep .eh_frame but no frame
//! pointers), then `perf script` folded into one line per distinct stack
//! by inferno's perf collapser, kernel frames marked `_[k]`.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use inferno::collapse::perf::{Folder, Options};
use inferno::collapse::Collapse;

use super::monitor::tree;
use super::which::find_program;

/// Samples a second per CPU: enough stacks in a sub-second window for the
/// top functions, and a rate perf's DWARF copies keep up with.
const FREQUENCY: &str = "499";

/// The sampled event: a clock, which needs no hardware counters.
const EVENT: &str = "cpu-clock";

/// The perf program: `LOADLAB_PERF` when set (a path that is not a file
/// means none), else the PATH's.
fn perf() -> Option<PathBuf> {
    find_program("LOADLAB_PERF", "perf", &["/usr/bin/perf"])
}

/// Why this host cannot profile a server, with how to enable it; None
/// when it can.
pub fn unavailable() -> Option<String> {
    let Some(perf) = perf() else {
        return Some("perf is not installed (Debian: apt-get install linux-perf)".into());
    };
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok());
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    match paranoid {
        Some(p) if p > 1 && !root => Some(format!(
            "perf_event_paranoid is {p}, which forbids profiling another process (run loadlab as root, or as root: sysctl kernel.perf_event_paranoid=1)"
        )),
        _ => {
            // A perf that cannot run (Debian's wrapper without a build for
            // this kernel) says so itself.
            let ok = Command::new(&perf)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            (!ok).then(|| format!("{} --version failed: perf cannot run here", perf.display()))
        }
    }
}

/// A `perf record` running on a tree.
#[derive(Debug)]
pub struct Recording {
    child: Child,
    /// The tree's processes, as `perf script --pid` takes them.
    pids: String,
    data: PathBuf,
    started: Instant,
}

impl Recording {
    /// Starts sampling every process of `root`'s tree (and the threads
    /// they start) into `data`.
    pub fn start(root: u32, data: &Path) -> Result<Recording, String> {
        let perf = perf().ok_or("perf is not installed")?;
        let pids: Vec<String> = tree(root).iter().map(u32::to_string).collect();
        // Every CPU, kept to the tree's processes when read: a per-process
        // recording misses the threads a server starts after it attached
        // (a thread per connection).
        let dir = data.parent().unwrap_or(Path::new("."));
        let (ctl, ack) = (dir.join("ctl.fifo"), dir.join("ack.fifo"));
        for f in [&ctl, &ack] {
            nix::unistd::mkfifo(f, nix::sys::stat::Mode::S_IRWXU)
                .map_err(|e| format!("cannot make {}: {e}", f.display()))?;
        }
        // Started with its events off (-D -1), and on once it says so: a
        // system-wide perf first lists every process on the host, which
        // takes longer than a short run on a busy one.
        let mut child = Command::new(perf)
            .args(["record", "-q", "-a", "-B", "-N", "-D", "-1", "-e", EVENT])
            .args(["-F", FREQUENCY, "--call-graph", "dwarf", "--control"])
            .arg(format!("fifo:{},{}", ctl.display(), ack.display()))
            .arg("-o")
            .arg(data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start perf record: {e}"))?;
        if let Err(e) = enable(&mut child, &ctl, &ack) {
            let _ = child.kill();
            let out = child.wait_with_output().ok();
            let err = out.map(|o| String::from_utf8_lossy(&o.stderr).into_owned());
            let first = err.as_deref().and_then(|e| e.lines().next()).unwrap_or("");
            return Err(format!("perf record did not start: {e} {first}")
                .trim()
                .to_string());
        }
        Ok(Recording {
            child,
            pids: pids.join(","),
            data: data.to_path_buf(),
            started: Instant::now(),
        })
    }

    /// Stops sampling and returns the folded stacks.
    pub fn finish(self) -> Result<Stacks, String> {
        // SIGINT: perf writes its data and exits.
        // SAFETY: kill on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let out = self
            .child
            .wait_with_output()
            .map_err(|e| format!("perf record: {e}"))?;
        if !self.data.is_file() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(format!(
                "perf record wrote nothing after {:.1} s: {}",
                self.started.elapsed().as_secs_f64(),
                err.lines().next().unwrap_or("no message")
            ));
        }
        fold(&self.data, &self.pids)
    }
}

/// How long perf may take to start sampling.
const START_WITHIN: Duration = Duration::from_secs(10);

/// Asks a perf started with its events off to turn them on, and waits
/// for its answer.
fn enable(child: &mut Child, ctl: &Path, ack: &Path) -> Result<(), String> {
    use std::io::{Read, Write};
    use std::os::unix::fs::OpenOptionsExt;
    let deadline = Instant::now() + START_WITHIN;
    let nonblocking = |write: bool, path: &Path| {
        std::fs::OpenOptions::new()
            .read(!write)
            .write(write)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
    };
    let mut answer = nonblocking(false, ack).map_err(|e| format!("{}: {e}", ack.display()))?;
    let mut asked = false;
    let mut got = Vec::new();
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("it exited ({status})"));
        }
        // The control FIFO opens for writing once perf holds its end.
        if !asked {
            if let Ok(mut c) = nonblocking(true, ctl) {
                c.write_all(b"enable\n").map_err(|e| format!("{e}"))?;
                asked = true;
            }
        }
        let mut buf = [0u8; 16];
        if let Ok(n) = answer.read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
            if got.starts_with(b"ack") {
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err(format!("no answer within {} s", START_WITHIN.as_secs()))
}

/// A recording's samples, folded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stacks {
    /// `frame;frame;... n` per line, callers first.
    pub folded: String,
    /// Samples perf wrote that the folder could not read (a thread caught
    /// as it exited has no name), so they are in no stack: said, not lost.
    pub left_out: u64,
}

/// `perf script` of `data`, the samples of `pids` only, folded.
fn fold(data: &Path, pids: &str) -> Result<Stacks, String> {
    let perf = perf().ok_or("perf is not installed")?;
    let mut script = Command::new(perf)
        .args([
            "script",
            "--no-inline",
            "-F",
            "comm,pid,tid,time,event,ip,sym,dso",
        ])
        .arg(format!("--pid={pids}"))
        .arg("-i")
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start perf script: {e}"))?;
    let stdout = script.stdout.take().ok_or("perf script has no output")?;
    let collapsed = collapse(BufReader::new(stdout));
    let status = script.wait().map_err(|e| format!("perf script: {e}"))?;
    let stacks = collapsed.map_err(|e| format!("cannot fold perf's stacks: {e}"))?;
    if !status.success() {
        return Err(format!("perf script failed ({status})"));
    }
    Ok(stacks)
}

/// `perf script` text folded. The event is named, not guessed from the
/// first stack: the collapser asserts that it can parse the first block,
/// and a first sample of an exiting thread aborted the whole run.
fn collapse(script: impl BufRead) -> std::io::Result<Stacks> {
    let mut options = Options::default();
    options.annotate_kernel = true;
    options.nthreads = 1;
    options.event_filter = Some(EVENT.to_string());
    let mut folded = Vec::new();
    let mut script = Headers::new(script);
    Folder::from(options).collapse(&mut script, &mut folded)?;
    let folded = String::from_utf8(folded)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let kept: u64 = folded
        .lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    Ok(Stacks {
        left_out: script.count.samples.saturating_sub(kept),
        folded,
    })
}

/// `perf script` output passed through, counting its samples.
struct Headers<R> {
    inner: R,
    count: Count,
}

/// Sample headers seen so far: lines that start with no blank and name
/// `EVENT` (a stack's frames are indented).
struct Count {
    event: Vec<u8>,
    line: Vec<u8>,
    samples: u64,
}

impl<R: BufRead> Headers<R> {
    fn new(inner: R) -> Self {
        let count = Count {
            event: format!(" {EVENT}:").into_bytes(),
            line: Vec::new(),
            samples: 0,
        };
        Headers { inner, count }
    }
}

impl Count {
    /// Takes the next bytes of the text; a line may span several calls.
    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b != b'\n' {
                self.line.push(b);
                continue;
            }
            let header = !matches!(self.line.first(), None | Some(b' ' | b'\t'));
            let ev = &self.event;
            if header && self.line.windows(ev.len()).any(|w| w == &ev[..]) {
                self.samples += 1;
            }
            self.line.clear();
        }
    }
}

impl<R: BufRead> Read for Headers<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.add(&buf[..n]);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Headers<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        // Counted as consumed: fill_buf may show the same bytes again.
        if let Ok(b) = self.inner.fill_buf() {
            self.count.add(&b[..amt.min(b.len())]);
        }
        self.inner.consume(amt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first block is what perf printed for a thread caught while it
    /// exited (no comm, tid -1), which the collapser cannot parse.
    #[test]
    fn regression_a_first_block_that_was_not_a_sample_aborted_the_fold() {
        let script = ":-1  6222/-1     9784.678576: cpu-clock: \n\
            \tffffffff81355044 account_kernel_stack.isra.0 ([kernel.kallsyms])\n\n\
            loadlab 4242/4243 100.000001: cpu-clock:\n\
            \tffffffff81000000 do_syscall_64 ([kernel.kallsyms])\n\
            \t55555555 main (/tmp/loadlab)\n\n\
            loadlab 4242/4243 100.000002: cpu-clock:\n\
            \t55555555 main (/tmp/loadlab)\n\n";
        let stacks = collapse(script.as_bytes()).unwrap();
        assert_eq!(
            stacks.folded,
            "loadlab;main 1\nloadlab;main;do_syscall_64_[k] 1\n"
        );
        // The sample it could not read is counted, not lost.
        assert_eq!(stacks.left_out, 1);
    }

    /// A reader that hands out a few bytes at a time, so lines span reads.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(buf.len()).min(7);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn every_sample_is_counted_however_the_text_arrives() {
        let mut script = String::new();
        for i in 0..50 {
            script.push_str(&format!(
                "loadlab 4242/4243 100.{i:06}: cpu-clock:\n\t55555555 main (/tmp/loadlab)\n\n"
            ));
        }
        script.push_str(":-1  6222/-1     9784.678576: cpu-clock: \n\tffffffff81355044 x ([kernel.kallsyms])\n\n");
        let reader = BufReader::with_capacity(5, Trickle(script.as_bytes()));
        let stacks = collapse(reader).unwrap();
        assert_eq!(stacks.folded, "loadlab;main 50\n");
        assert_eq!(stacks.left_out, 1);
    }

    #[test]
    fn samples_of_another_event_are_left_out() {
        let script = "loadlab 4242/4243 100.000001: page-faults:\n\
            \t55555555 main (/tmp/loadlab)\n\n";
        let stacks = collapse(script.as_bytes()).unwrap();
        assert_eq!((stacks.folded.as_str(), stacks.left_out), ("", 0));
    }
}
