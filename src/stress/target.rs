//! The server under test when stress starts its own: this same binary's
//! `serve` in a child process (proc's child runner: own process group,
//! stopped if stress dies) on a free loopback port, with its upload
//! directory in stress's scratch space, stopped when the cells for one
//! (model, workers) pair are done. It counts as started once it answers a
//! listing, not when it prints its address: a server can print the line
//! and then fail to set up its workers.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::client::{self, FILES_PREFIX};
use crate::catalog::models::Model;
use crate::net::url::HttpUrl;
use crate::proc::child::{serve_command, ChildServer, Ended};
use crate::results::files::is_temp_name;

/// How long a starting server may take to print its address and answer.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// The `--shutdown-grace` a server is started with: transfers in flight
/// when it is stopped get this long to finish.
const SHUTDOWN_GRACE: &str = "5s";
/// How long a stopping server may take to exit after SIGTERM (its own
/// shutdown grace and then some) before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Deadline of one readiness request, and the pause between attempts.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
const PROBE_PAUSE: Duration = Duration::from_millis(50);

pub struct SpawnedServer {
    process: ChildServer,
    pub endpoint: HttpUrl,
    pub files_dir: PathBuf,
}

impl SpawnedServer {
    /// Starts `loadlab serve` with `workers` of `model` and its files in
    /// `files_dir` (created).
    pub fn start(
        model: Model,
        workers: usize,
        files_dir: &Path,
        max_upload: u64,
        cpus: Option<usize>,
    ) -> anyhow::Result<SpawnedServer> {
        std::fs::create_dir_all(files_dir)
            .with_context(|| format!("creating {}", files_dir.display()))?;
        let exe = std::env::current_exe().context("finding the loadlab binary")?;
        let mut cmd = serve_command(&exe, model.name(), workers);
        cmd.args(["--shutdown-grace", SHUTDOWN_GRACE])
            .arg("--files")
            .arg(files_dir)
            .arg("--max-upload")
            .arg(max_upload.to_string());
        if let Some(n) = cpus {
            crate::proc::affinity::restrict(&mut cmd, n)?;
        }
        let process = ChildServer::spawn(cmd, None, Stdio::piped(), STOP_TIMEOUT)
            .context("starting loadlab serve")?;
        let mut server = SpawnedServer {
            process,
            endpoint: HttpUrl::local(([127, 0, 0, 1], 0).into(), FILES_PREFIX),
            files_dir: files_dir.to_path_buf(),
        };
        let until = Instant::now() + START_TIMEOUT;
        let ready = match server.process.startup_addr(START_TIMEOUT, &|| false) {
            Ok(addr) => {
                server.endpoint = HttpUrl::local(addr, FILES_PREFIX);
                server.wait_ready(until)
            }
            Err(e) => Err(format!("it {e}")),
        };
        match ready {
            Ok(()) => Ok(server),
            Err(why) => {
                // Stopped first, so its last words are in the tail.
                server.process.stop();
                let words = server.process.last_words();
                anyhow::bail!(
                    "loadlab serve --model {model} --workers {workers} did not start: {why}; its last words: {}",
                    if words.is_empty() { "none" } else { &words }
                )
            }
        }
    }

    /// The server's process, for checks that watch it.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Waits until the server answers `GET /files/`, it exits, or `until`.
    fn wait_ready(&mut self, until: Instant) -> Result<(), String> {
        loop {
            let deadline = until.min(Instant::now() + PROBE_TIMEOUT);
            let err = match client::list(&self.endpoint, client::Until::deadline(deadline)) {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            if let Some(status) = self.process.exited() {
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

    /// Stops the server and its process group: SIGTERM, then SIGKILL if
    /// it lingers. Says what went wrong if it had died already or had to
    /// be killed.
    pub fn stop(mut self) -> Result<(), String> {
        match self.process.stop() {
            Ended::Stopped => Ok(()),
            Ended::Died(status) => Err(format!("the server exited during the run ({status})")),
            Ended::Killed => Err("the server ignored SIGTERM and was killed".into()),
        }
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
