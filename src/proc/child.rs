//! Starting a target's process the way a measurement needs it: in its own
//! process group (a terminal's Ctrl-C reaches loadlab alone, which then
//! stops the target after recording what is complete), with the soft
//! open-file limit raised to the hard one (10,000 clients need 10,000
//! descriptors), stopped if loadlab dies, and with the tail of its stderr
//! kept so a failed start can say why.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Bytes of stderr kept: enough for a traceback's last lines.
const TAIL_BYTES: usize = 4096;
/// Lines of that tail quoted in an error.
const TAIL_LINES: usize = 5;

/// Sets up `cmd` to start as a target: own process group, raised
/// open-file limit, SIGTERM when loadlab goes away, and restricted to the
/// first `cpus` allowed CPUs when given.
pub fn prepare(cmd: &mut Command, cpus: Option<usize>) -> anyhow::Result<()> {
    cmd.process_group(0);
    if let Some(n) = cpus {
        super::affinity::restrict(cmd, n)?;
    }
    // SAFETY: getrlimit, setrlimit and prctl are plain syscalls that
    // allocate and lock nothing, so they are safe between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // A failure leaves the inherited limit; the server then reports
            // its own "too many open files", which is the honest outcome.
            let _ = crate::sys::rlimit::raise_nofile_limit();
            // A target outliving a killed loadlab would hold its port and
            // skew the next sweep. The signal fires when the thread that
            // started it exits, and every caller starts and stops a target
            // on one thread.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    Ok(())
}

/// Spawns a prepared command with stdin closed, `stdout` as given and
/// stderr collected into a tail.
pub fn spawn(mut cmd: Command, stdout: Stdio) -> anyhow::Result<(Child, StderrTail)> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot run {program}: {e}"))?;
    let tail = match child.stderr.take() {
        Some(err) => StderrTail::collect(err),
        None => StderrTail::empty(),
    };
    Ok((child, tail))
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
pub struct StderrTail(Arc<(Mutex<Tail>, Condvar)>);

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
    pub fn text(&self, wait: Duration) -> String {
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

/// " (stderr: ...)" for an error message, or nothing when stderr was
/// silent.
pub fn stderr_note(tail: &StderrTail) -> String {
    let t = tail.text(Duration::from_millis(500));
    if t.is_empty() {
        " (nothing on stderr)".into()
    } else {
        format!(" (stderr: {t})")
    }
}

/// SIGTERM to the child's process group (a `cmd:` server's workers, a
/// prefork model's processes), then SIGKILL if it has not ended in 3 s.
pub fn stop_group(child: &mut Child) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let pid = child.id() as i32;
    if let Ok(Some(_)) = child.try_wait() {
        // Gone already; its group may still hold workers.
        let _ = kill(Pid::from_raw(-pid), Signal::SIGKILL);
        return;
    }
    let _ = kill(Pid::from_raw(-pid), Signal::SIGTERM);
    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    for _ in 0..300 {
        if let Ok(Some(_)) = child.try_wait() {
            // Workers that ignored the group's SIGTERM go now.
            let _ = kill(Pid::from_raw(-pid), Signal::SIGKILL);
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = kill(Pid::from_raw(-pid), Signal::SIGKILL);
    let _ = child.kill();
    let _ = child.wait();
}
