//! What the lab measures: a built-in model in a child process, nginx with a
//! generated config, any command with `{port}`, or a running URL. Started
//! on a free loopback port, stopped when dropped.

use std::fmt;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::Duration;

use super::nginx::{Nginx, NginxOptions};
use super::ports::{free_port, wait_accepting};
use crate::server::Model;

#[derive(Debug, Clone, PartialEq)]
pub enum TargetSpec {
    Model {
        model: Model,
        workers: Option<usize>,
    },
    Nginx {
        workers: Option<usize>,
    },
    /// A shell command; `{port}` is replaced by a free port.
    Cmd {
        command: String,
    },
    /// An already running server (no resource figures then).
    Url {
        url: String,
    },
}

impl FromStr for TargetSpec {
    type Err = String;

    /// `model:NAME[:workers=N]`, `nginx[:workers=N]`, `cmd:COMMAND`, `url:http://...`.
    fn from_str(s: &str) -> Result<Self, String> {
        let workers_opt = |rest: Option<&str>| -> Result<Option<usize>, String> {
            match rest {
                None => Ok(None),
                Some(r) => r
                    .strip_prefix("workers=")
                    .and_then(|n| n.parse().ok())
                    .map(Some)
                    .ok_or_else(|| {
                        format!("invalid target option '{r}' in '{s}' (expected workers=N)")
                    }),
            }
        };
        if let Some(rest) = s.strip_prefix("model:") {
            let mut parts = rest.splitn(2, ':');
            let model: Model = parts.next().unwrap_or("").parse()?;
            return Ok(TargetSpec::Model {
                model,
                workers: workers_opt(parts.next())?,
            });
        }
        if s == "nginx" || s.starts_with("nginx:") {
            return Ok(TargetSpec::Nginx {
                workers: workers_opt(s.strip_prefix("nginx:"))?,
            });
        }
        if let Some(cmd) = s.strip_prefix("cmd:") {
            if !cmd.contains("{port}") {
                return Err(format!(
                    "cmd target '{cmd}' must contain {{port}} where the port goes"
                ));
            }
            return Ok(TargetSpec::Cmd {
                command: cmd.to_string(),
            });
        }
        if let Some(url) = s.strip_prefix("url:") {
            crate::bench::Target::parse(url).map_err(|e| e.0)?;
            return Ok(TargetSpec::Url {
                url: url.trim_end_matches('/').to_string(),
            });
        }
        Err(format!(
            "unknown target '{s}' (expected model:NAME[:workers=N], nginx[:workers=N], cmd:'COMMAND {{port}}' or url:http://...)"
        ))
    }
}

impl fmt::Display for TargetSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetSpec::Model {
                model,
                workers: None,
            } => write!(f, "model:{model}"),
            TargetSpec::Model {
                model,
                workers: Some(w),
            } => write!(f, "model:{model}:workers={w}"),
            TargetSpec::Nginx { workers: None } => write!(f, "nginx"),
            TargetSpec::Nginx { workers: Some(w) } => write!(f, "nginx:workers={w}"),
            TargetSpec::Cmd { command } => write!(f, "cmd:{command}"),
            TargetSpec::Url { url } => write!(f, "url:{url}"),
        }
    }
}

impl TargetSpec {
    /// Workers the target will run with, for the report.
    pub fn workers(&self, sweep_workers: Option<usize>) -> usize {
        match self {
            TargetSpec::Model { model, workers } => model.effective_workers(
                sweep_workers
                    .or(*workers)
                    .unwrap_or_else(|| model.default_workers()),
            ),
            TargetSpec::Nginx { workers } => {
                sweep_workers.or(*workers).unwrap_or_else(default_cores)
            }
            _ => 0,
        }
    }
}

fn default_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Where and how targets are started.
#[derive(Debug, Clone)]
pub struct StartContext {
    /// The loadlab binary that runs built-in models.
    pub exe: PathBuf,
    /// Directory with the embedded docroot on disk (served by nginx).
    pub docroot: PathBuf,
}

/// A started target; stopping happens on drop.
#[derive(Debug)]
pub struct Running {
    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub base: String,
    /// Root of the target's process tree, when we started it.
    pub pid: Option<u32>,
    child: Option<Child>,
    _nginx: Option<Nginx>,
}

impl Running {
    pub fn start(
        spec: &TargetSpec,
        ctx: &StartContext,
        workers: Option<usize>,
        cpus: Option<usize>,
    ) -> anyhow::Result<Running> {
        match spec {
            TargetSpec::Model { model, .. } => {
                let w = spec.workers(workers);
                let mut cmd = Command::new(&ctx.exe);
                cmd.args(["serve", "--model", model.name(), "--addr", "127.0.0.1:0"]);
                cmd.args(["--workers", &w.to_string()]);
                let mut child = spawn(cmd, cpus, Stdio::piped())?;
                let stdout = child
                    .stdout
                    .take()
                    .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
                let mut line = String::new();
                BufReader::new(stdout).read_line(&mut line)?;
                let addr = line
                    .strip_prefix("listening on ")
                    .and_then(|r| r.split_whitespace().next())
                    .ok_or_else(|| anyhow::anyhow!("{spec} did not start: {line:?}"))?;
                Ok(Running {
                    base: addr.to_string(),
                    pid: Some(child.id()),
                    child: Some(child),
                    _nginx: None,
                })
            }
            TargetSpec::Nginx { .. } => {
                let mut opts = NginxOptions::new(&ctx.docroot);
                opts.workers = spec.workers(workers);
                opts.affinity = cpus;
                let n = Nginx::start(&opts)?;
                Ok(Running {
                    base: format!("http://{}", n.addr),
                    pid: Some(n.pid()),
                    child: None,
                    _nginx: Some(n),
                })
            }
            TargetSpec::Cmd { command } => {
                let port = free_port()?;
                let line = command.replace("{port}", &port.to_string());
                let mut cmd = Command::new("sh");
                cmd.args(["-c", &format!("exec {line}")]);
                // Its own process group, so the whole tree can be stopped.
                cmd.process_group(0);
                let mut child = spawn(cmd, cpus, Stdio::null())?;
                let addr = ([127, 0, 0, 1], port).into();
                if !wait_accepting(addr, Duration::from_secs(15)) {
                    let _ = child.kill();
                    let _ = child.wait();
                    anyhow::bail!(
                        "{spec}: nothing accepted connections on port {port} within 15 s"
                    );
                }
                Ok(Running {
                    base: format!("http://127.0.0.1:{port}"),
                    pid: Some(child.id()),
                    child: Some(child),
                    _nginx: None,
                })
            }
            TargetSpec::Url { url } => Ok(Running {
                base: url.clone(),
                pid: None,
                child: None,
                _nginx: None,
            }),
        }
    }
}

fn spawn(mut cmd: Command, cpus: Option<usize>, stdout: Stdio) -> anyhow::Result<Child> {
    cmd.stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::null());
    if let Some(n) = cpus {
        super::affinity::restrict(&mut cmd, n);
    }
    Ok(cmd.spawn()?)
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        let pid = child.id() as i32;
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;
        // The group first (cmd targets and their children), then the pid.
        let _ = kill(Pid::from_raw(-pid), Signal::SIGTERM);
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        for _ in 0..300 {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = kill(Pid::from_raw(-pid), Signal::SIGKILL);
        let _ = child.kill();
        let _ = child.wait();
    }
}
