//! The server under test when stress starts its own: this same binary's
//! `serve` in a child process on a free loopback port, with its upload
//! directory in stress's scratch space, stopped (SIGTERM, then SIGKILL)
//! when the cells for one (model, workers) pair are done, or when stress
//! itself dies. It counts as
//! started once it answers a listing, not when it prints its address: a
//! server can print the line and then fail to set up its workers.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::client::{self, FILES_PREFIX};
use crate::net::url::HttpUrl;
use crate::server::handlers::files::stale::is_temp_name;
use crate::server::Model;

/// How long a starting server may take to print its address.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a stopping server may take to exit after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Deadline of one readiness request, and the pause between attempts.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
const PROBE_PAUSE: Duration = Duration::from_millis(50);

pub struct SpawnedServer {
    child: Child,
    pub endpoint: HttpUrl,
    pub files_dir: PathBuf,
}

impl SpawnedServer {
    /// Starts `loadlab serve` with `workers` of `model`, files in
    /// `files_dir` (created) and its stderr in `log`.
    pub fn start(
        model: Model,
        workers: usize,
        files_dir: &Path,
        max_upload: u64,
        log: &Path,
    ) -> anyhow::Result<SpawnedServer> {
        std::fs::create_dir_all(files_dir)
            .with_context(|| format!("creating {}", files_dir.display()))?;
        let exe = std::env::current_exe().context("finding the loadlab binary")?;
        let stderr = File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = Command::new(exe);
        cmd.args(["serve", "--model", model.name(), "--workers"])
            .arg(workers.to_string())
            .args(["--addr", "127.0.0.1:0", "--shutdown-grace", "5s", "--files"])
            .arg(files_dir)
            .arg("--max-upload")
            .arg(max_upload.to_string());
        // As a sweep's targets: stopped if stress dies (a server left
        // running would hold its port and its upload directory), and out
        // of the terminal's process group, so Ctrl-C reaches stress alone.
        crate::proc::child::prepare(&mut cmd, None)?;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .context("starting loadlab serve")?;
        let stdout = child.stdout.take().context("server stdout")?;
        let (tx, rx) = mpsc::channel();
        // Reads the startup line, then keeps draining so the server never
        // blocks on a full pipe.
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            let mut line = String::new();
            let _ = r.read_line(&mut line);
            let _ = tx.send(line);
            let _ = std::io::copy(&mut r, &mut std::io::sink());
        });
        let until = Instant::now() + START_TIMEOUT;
        let line = rx.recv_timeout(START_TIMEOUT).unwrap_or_default();
        let addr: Option<SocketAddr> = line
            .strip_prefix("listening on http://")
            .and_then(|r| r.split_whitespace().next())
            .and_then(|a| a.parse().ok());
        let mut server = SpawnedServer {
            child,
            endpoint: HttpUrl::local(SocketAddr::from(([127, 0, 0, 1], 0)), FILES_PREFIX),
            files_dir: files_dir.to_path_buf(),
        };
        let ready = match addr {
            Some(a) => {
                server.endpoint = HttpUrl::local(a, FILES_PREFIX);
                server.wait_ready(until)
            }
            None => Err("it printed no address".to_string()),
        };
        match ready {
            Ok(()) => Ok(server),
            Err(why) => {
                server.kill();
                let log = std::fs::read_to_string(log).unwrap_or_default();
                anyhow::bail!(
                    "loadlab serve --model {model} --workers {workers} did not start: {why}; its last words: {}",
                    log.lines().last().unwrap_or("none")
                )
            }
        }
    }

    /// Waits until the server answers `GET /files/`, it exits, or `until`.
    fn wait_ready(&mut self, until: Instant) -> Result<(), String> {
        loop {
            let deadline = until.min(Instant::now() + PROBE_TIMEOUT);
            let err = match client::list(&self.endpoint, deadline) {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("it exited ({status})"));
            }
            if Instant::now() + PROBE_PAUSE >= until {
                return Err(format!(
                    "no answer to GET /files/ within {}s ({err})",
                    START_TIMEOUT.as_secs()
                ));
            }
            std::thread::sleep(PROBE_PAUSE);
        }
    }

    /// Stops the server: SIGTERM, then SIGKILL if it lingers. Says what
    /// went wrong if it had died already or had to be killed.
    pub fn stop(mut self) -> Result<(), String> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Err(format!("the server exited during the run ({status})"));
        }
        match self.kill() {
            true => Ok(()),
            false => Err("the server ignored SIGTERM and was killed".into()),
        }
    }

    /// Returns whether the server exited by itself (or already had).
    fn kill(&mut self) -> bool {
        if let Ok(Some(_)) = self.child.try_wait() {
            return true;
        }
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let until = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        false
    }
}

impl Drop for SpawnedServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What was left in an upload directory: (temporary files, other files).
pub fn leftovers(dir: &Path) -> (usize, usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    rd.flatten().fold((0, 0), |(t, f), e| {
        if e.file_name().to_str().is_some_and(is_temp_name) {
            (t + 1, f)
        } else {
            (t, f + 1)
        }
    })
}
