//! The one way loadlab starts and stops a server under test (a built-in
//! model's `loadlab serve`, nginx, a `cmd:` target, stress's servers):
//! in its own process group (a terminal's Ctrl-C reaches loadlab alone,
//! which then stops the server after recording what is complete), with the
//! soft open-file limit raised to the hard one (10,000 clients need 10,000
//! descriptors), sent SIGTERM if loadlab dies, with the tail of its stderr
//! kept so a failure can say why, and stopped with its whole process group
//! when dropped. Also the start-up line `loadlab serve` prints, defined
//! once for the printer and every reader.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// What `loadlab serve`'s one start-up line begins with; the listening
/// address follows, then ` model=... workers=...`. Scripts and tests read
/// the port from it when they asked for port 0.
pub const STARTUP_PREFIX: &str = "listening on http://";

/// `exe serve --model MODEL --workers N --addr 127.0.0.1:0`: this binary
/// serving one model on a free loopback port, which it reports in its
/// start-up line. Callers add their own flags.
pub fn serve_command(exe: &std::path::Path, model: &str, workers: usize) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(["serve", "--model", model, "--workers", &workers.to_string()])
        .args(["--addr", "127.0.0.1:0"]);
    cmd
}

/// The listening address in a start-up line, or None if `line` is not one.
pub fn parse_startup_line(line: &str) -> Option<SocketAddr> {
    line.strip_prefix(STARTUP_PREFIX)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Bytes of stderr kept: enough for a traceback's last lines.
const TAIL_BYTES: usize = 4096;
/// Lines of that tail quoted in an error.
const TAIL_LINES: usize = 5;
/// How often waits look at the process and at the caller's `stop`.
const POLL: Duration = Duration::from_millis(20);

/// Sets up `cmd` to start as a server under test: own process group,
/// raised open-file limit, SIGTERM when loadlab goes away, and restricted
/// to the first `cpus` allowed CPUs when given.
fn prepare(cmd: &mut Command, cpus: Option<usize>) -> anyhow::Result<()> {
    cmd.process_group(0);
    if let Some(n) = cpus {
        super::affinity::restrict(cmd, n)?;
    }
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: getrlimit, setrlimit, prctl and getppid are plain syscalls
    // that allocate and lock nothing, so they are safe between fork and
    // exec; the error returned is built without allocating.
    unsafe {
        cmd.pre_exec(move || {
            // A failure leaves the inherited limit; the server then reports
            // its own "too many open files", which is the honest outcome.
            let _ = crate::sys::rlimit::raise_nofile_limit();
            // A server outliving a killed loadlab would hold its port and
            // skew the next run. The signal fires when the thread that
            // started it exits, and every owner starts and stops a server
            // on one thread.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            // loadlab died between fork and prctl: no signal will come.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    Ok(())
}

/// How a stopped server ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It had exited before it was asked to stop.
    Died(ExitStatus),
    /// It exited within the grace period after SIGTERM.
    Stopped,
    /// It outlived the grace period and was killed.
    Killed,
}

/// Why no address was read from a server's start-up line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoAddress {
    /// The caller's `stop` said so (Ctrl-C).
    #[error("was interrupted while starting")]
    Interrupted,
    #[error("printed no address within {} s", .0.as_secs())]
    TimedOut(Duration),
    /// It exited, or printed something else first.
    #[error("printed no address")]
    Missing,
}

/// A server process loadlab started; its whole process group is stopped
/// when it is dropped (or earlier, with `stop`).
#[derive(Debug)]
pub struct ChildServer {
    child: Child,
    stderr: StderrTail,
    /// Between SIGTERM to the group and SIGKILL.
    grace: Duration,
    ended: Option<Ended>,
}

impl ChildServer {
    /// Starts `cmd` as a server under test (see the module comment) with
    /// stdin closed, `stdout` as given and stderr collected into a tail;
    /// `grace` is how long stopping waits between SIGTERM and SIGKILL.
    pub fn spawn(
        mut cmd: Command,
        cpus: Option<usize>,
        stdout: Stdio,
        grace: Duration,
    ) -> anyhow::Result<ChildServer> {
        prepare(&mut cmd, cpus)?;
        let program = cmd.get_program().to_string_lossy().into_owned();
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| anyhow::anyhow!("cannot run {program}: {e}"))?;
        let stderr = match child.stderr.take() {
            Some(err) => StderrTail::collect(err),
            None => StderrTail::empty(),
        };
        Ok(ChildServer {
            child,
            stderr,
            grace,
            ended: None,
        })
    }

    /// Reads the start-up line (spawned with `Stdio::piped()`) on a thread,
    /// so that `stop` (Ctrl-C) and `limit` can end the wait, and returns
    /// the address in it. The thread then drains stdout for the server's
    /// life, so it never blocks on a full pipe.
    pub fn startup_addr(
        &mut self,
        limit: Duration,
        stop: &dyn Fn() -> bool,
    ) -> Result<SocketAddr, NoAddress> {
        let Some(stdout) = self.child.stdout.take() else {
            return Err(NoAddress::Missing);
        };
        let (tx, rx) = mpsc::channel();
        let reader = move || {
            let mut r = BufReader::new(stdout);
            let mut line = String::new();
            let _ = r.read_line(&mut line);
            let _ = tx.send(line);
            let _ = std::io::copy(&mut r, &mut std::io::sink());
        };
        if std::thread::Builder::new()
            .name("target-stdout".into())
            .spawn(reader)
            .is_err()
        {
            return Err(NoAddress::Missing);
        }
        let until = Instant::now() + limit;
        loop {
            match rx.recv_timeout(POLL) {
                Ok(line) => return parse_startup_line(&line).ok_or(NoAddress::Missing),
                // The reader ended without a line: the process is gone.
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(NoAddress::Missing),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if stop() {
                return Err(NoAddress::Interrupted);
            }
            if Instant::now() >= until {
                return Err(NoAddress::TimedOut(limit));
            }
        }
    }

    /// The process's pid: the root of its tree and its process group.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status, if the process has ended.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// " (exit status: 1)" once the process has ended (it is given a moment
    /// to), or nothing while it still runs.
    pub fn exit_text(&mut self) -> String {
        for _ in 0..20 {
            if let Some(status) = self.exited() {
                return format!(" ({status})");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        String::new()
    }

    /// The last lines of its stderr on one line (see `StderrTail::text`).
    pub fn last_words(&self) -> String {
        self.stderr.text(Duration::from_millis(500))
    }

    /// " (stderr: ...)" for an error message, or " (nothing on stderr)".
    pub fn stderr_note(&self) -> String {
        match self.last_words() {
            t if t.is_empty() => " (nothing on stderr)".into(),
            t => format!(" (stderr: {t})"),
        }
    }

    /// Stops the whole process group (a `cmd:` server's workers, a prefork
    /// model's processes, nginx's workers): SIGTERM, then SIGKILL for
    /// whatever is left once the leader exits or `grace` runs out. Says
    /// how the server ended; later calls say the same.
    pub fn stop(&mut self) -> Ended {
        if let Some(ended) = self.ended {
            return ended;
        }
        let group = Pid::from_raw(-(self.child.id() as i32));
        let ended = if let Some(status) = self.exited() {
            // Gone already; its group may still hold workers, orphaned
            // and serving.
            let _ = kill(group, Signal::SIGKILL);
            Ended::Died(status)
        } else {
            let _ = kill(group, Signal::SIGTERM);
            let until = Instant::now() + self.grace;
            let stopped = loop {
                if self.exited().is_some() {
                    break true;
                }
                if Instant::now() >= until {
                    break false;
                }
                std::thread::sleep(Duration::from_millis(10));
            };
            // Workers that ignored the group's SIGTERM go now.
            let _ = kill(group, Signal::SIGKILL);
            if stopped {
                Ended::Stopped
            } else {
                let _ = self.child.kill();
                let _ = self.child.wait();
                Ended::Killed
            }
        };
        self.ended = Some(ended);
        ended
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    eof: bool,
}

/// The last few KiB a process wrote to stderr. A thread drains the pipe
/// for the process's whole life, so a chatty server (python's http.server
/// logs every request) never blocks on a full pipe.
#[derive(Clone)]
struct StderrTail(Arc<(Mutex<Tail>, Condvar)>);

impl std::fmt::Debug for StderrTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StderrTail")
    }
}

impl StderrTail {
    fn empty() -> StderrTail {
        let t = Tail {
            bytes: Vec::new(),
            eof: true,
        };
        StderrTail(Arc::new((Mutex::new(t), Condvar::new())))
    }

    fn collect(mut from: impl Read + Send + 'static) -> StderrTail {
        let tail = StderrTail(Arc::new((Mutex::new(Tail::default()), Condvar::new())));
        let shared = Arc::clone(&tail.0);
        let reader = move || {
            let mut buf = [0u8; 4096];
            loop {
                let n = from.read(&mut buf).unwrap_or(0);
                let (lock, cv) = &*shared;
                let mut t = lock.lock().unwrap_or_else(|e| e.into_inner());
                if n == 0 {
                    t.eof = true;
                    cv.notify_all();
                    return;
                }
                t.bytes.extend_from_slice(&buf[..n]);
                if t.bytes.len() > 2 * TAIL_BYTES {
                    let cut = t.bytes.len() - TAIL_BYTES;
                    t.bytes.drain(..cut);
                }
            }
        };
        // Without the thread the pipe would fill and stall the server, so
        // a failure to start one closes the pipe instead (writes then fail
        // with EPIPE rather than block).
        if std::thread::Builder::new()
            .name("target-stderr".into())
            .spawn(reader)
            .is_err()
        {
            return StderrTail::empty();
        }
        tail
    }

    /// The last lines written, joined on one line (errors are one line
    /// everywhere: terminal, raw.csv, report tables). Waits up to `wait`
    /// for the pipe to close, so an exited process's last words are in.
    fn text(&self, wait: Duration) -> String {
        let (lock, cv) = &*self.0;
        let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (t, _) = cv
            .wait_timeout_while(guard, wait, |t| !t.eof)
            .unwrap_or_else(|e| e.into_inner());
        let from = t.bytes.len().saturating_sub(TAIL_BYTES);
        let text = String::from_utf8_lossy(&t.bytes[from..]).into_owned();
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        lines[lines.len().saturating_sub(TAIL_LINES)..].join(" / ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_startup_line_yields_its_address() {
        let line = format!("{STARTUP_PREFIX}127.0.0.1:4321 model=event-loop workers=2\n");
        assert_eq!(
            parse_startup_line(&line),
            Some(([127, 0, 0, 1], 4321).into())
        );
        assert_eq!(
            parse_startup_line(&format!("{STARTUP_PREFIX}[::1]:80")),
            Some("[::1]:80".parse().unwrap())
        );
        for other in ["", "listening on 127.0.0.1:1", "error: cannot listen"] {
            assert_eq!(parse_startup_line(other), None, "{other:?}");
        }
    }

    /// `sh -c SCRIPT` started as a server, stopped with `grace`.
    fn sh(script: &str, stdout: Stdio, grace: Duration) -> ChildServer {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        ChildServer::spawn(c, None, stdout, grace).unwrap()
    }

    #[test]
    fn a_failed_start_keeps_stderr_and_exit_status() {
        let mut s = sh(
            "echo first >&2; echo last words >&2; exit 3",
            Stdio::piped(),
            Duration::from_secs(1),
        );
        assert_eq!(
            s.startup_addr(Duration::from_secs(10), &|| false),
            Err(NoAddress::Missing)
        );
        assert_eq!(s.exit_text(), " (exit status: 3)");
        assert_eq!(s.stderr_note(), " (stderr: first / last words)");
        assert!(matches!(s.stop(), Ended::Died(st) if st.code() == Some(3)));
    }

    #[test]
    fn stop_ends_the_whole_group_and_says_how() {
        // A leader that ignores SIGTERM, with a worker in its group: both
        // are gone after the grace period.
        let mut s = sh(
            "trap '' TERM; sleep 60 & echo $!; wait",
            Stdio::piped(),
            Duration::from_millis(300),
        );
        let stdout = s.child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let worker: i32 = line.trim().parse().unwrap();
        assert_eq!(s.stop(), Ended::Killed);
        assert_eq!(s.stop(), Ended::Killed, "a second stop says the same");
        let gone = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            kill(Pid::from_raw(worker), None).is_err()
                || std::fs::read_to_string(format!("/proc/{worker}/stat")).is_ok_and(|s| {
                    s.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('Z')
                })
        });
        assert!(gone, "worker {worker} outlived its group's stop");
        let mut quick = sh("exec sleep 60", Stdio::null(), Duration::from_secs(5));
        assert_eq!(quick.stop(), Ended::Stopped);
    }

    #[test]
    fn a_wait_for_the_startup_line_can_be_interrupted_or_time_out() {
        let spawn = || sh("exec sleep 60", Stdio::piped(), Duration::from_secs(1));
        assert_eq!(
            spawn().startup_addr(Duration::from_secs(30), &|| true),
            Err(NoAddress::Interrupted)
        );
        assert_eq!(
            spawn().startup_addr(Duration::from_millis(100), &|| false),
            Err(NoAddress::TimedOut(Duration::from_millis(100)))
        );
    }
}
