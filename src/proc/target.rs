//! A server under test, for the lab and for check alike: a built-in model
//! in a child process, nginx with a generated config, Go's net/http
//! (examples/go/server.go, built once), any command with `{port}`, or a
//! running URL. Started on a free loopback port, stopped when dropped.

use std::fmt;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::time::Duration;

use super::child::{serve_command, ChildServer, NoAddress};
use super::go::{self, find_go};
use super::nginx::{find_nginx, Nginx, NginxOptions, INSTALL_HINT};
use super::ports::{free_port, wait_accepting, NotAccepting};
use crate::catalog::models::Model;
use crate::net::url::HttpUrl;

/// How long a `cmd:` target may take to accept connections: a student's
/// server may compile or load data first.
pub const CMD_START_LIMIT: Duration = Duration::from_secs(15);
/// Ports a `cmd:` target is given before a start that failed because
/// another process took its port counts as the target's failure.
const CMD_PORT_ATTEMPTS: usize = 3;

/// A `cmd:` target exited before accepting, and another process holds
/// the port it was given.
#[derive(Debug, thiserror::Error)]
#[error("port {0} was taken by another process")]
struct PortTaken(u16);
/// How long `loadlab serve` may take to print its address.
const MODEL_START_LIMIT: Duration = Duration::from_secs(15);
/// How long a target gets to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, PartialEq)]
pub enum TargetSpec {
    Model {
        model: Model,
        workers: Option<usize>,
    },
    Nginx {
        workers: Option<usize>,
    },
    /// Go's net/http: examples/go/server.go, built once and run with
    /// `workers` as GOMAXPROCS.
    Go {
        workers: Option<usize>,
    },
    /// A shell command; `{port}` is replaced by a free port.
    Cmd {
        command: String,
    },
    /// An already running server (no resource figures then), at `base`
    /// (`http://host[:port]`), requested at its own `path` (`/` when the
    /// URL has none): every run of the sweep requests that path.
    Url {
        base: String,
        path: String,
    },
}

impl FromStr for TargetSpec {
    type Err = String;

    /// `model:NAME[:workers=N]`, `nginx[:workers=N]`, `go[:workers=N]`,
    /// `cmd:COMMAND`, `url:http[s]://...`.
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
        // A count the target cannot run with is refused here, not rounded
        // up to one it can (prefork ran one worker for workers=0).
        let checked = |t: TargetSpec| match t {
            TargetSpec::Model {
                workers: Some(n), ..
            }
            | TargetSpec::Nginx { workers: Some(n) }
            | TargetSpec::Go { workers: Some(n) } => t
                .check_workers(n)
                .map(|()| t)
                .map_err(|e| format!("'{s}': {e}")),
            t => Ok(t),
        };
        if let Some(rest) = s.strip_prefix("model:") {
            let mut parts = rest.splitn(2, ':');
            let model: Model = parts.next().unwrap_or("").parse()?;
            return checked(TargetSpec::Model {
                model,
                workers: workers_opt(parts.next())?,
            });
        }
        if s == "nginx" || s.starts_with("nginx:") {
            return checked(TargetSpec::Nginx {
                workers: workers_opt(s.strip_prefix("nginx:"))?,
            });
        }
        if s == "go" || s.starts_with("go:") {
            return checked(TargetSpec::Go {
                workers: workers_opt(s.strip_prefix("go:"))?,
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
            let u = HttpUrl::parse(url).map_err(|e| e.to_string())?;
            return Ok(TargetSpec::Url {
                base: format!("{}://{}", u.scheme(), u.host_header()),
                path: u.path,
            });
        }
        Err(format!(
            "unknown target '{s}' (expected model:NAME[:workers=N], nginx[:workers=N], go[:workers=N], cmd:'COMMAND {{port}}' or url:http[s]://...)"
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
            TargetSpec::Go { workers: None } => write!(f, "go"),
            TargetSpec::Go { workers: Some(w) } => write!(f, "go:workers={w}"),
            TargetSpec::Cmd { command } => write!(f, "cmd:{command}"),
            // The server, not the path: the row's path column has that,
            // and a target keeps one name whatever it is asked for.
            TargetSpec::Url { base, .. } => write!(f, "url:{base}"),
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
            TargetSpec::Nginx { workers } | TargetSpec::Go { workers } => {
                sweep_workers.or(*workers).unwrap_or_else(crate::sys::cores)
            }
            _ => 0,
        }
    }

    /// Refuses a worker count below what the target can run with: a
    /// model's minimum (`serve --workers` says the same), or no nginx
    /// worker process at all. Targets that ignore the count take any.
    pub fn check_workers(&self, n: usize) -> Result<(), String> {
        match self {
            TargetSpec::Model { model, .. } => model.check_workers(n).map_err(|e| e.to_string()),
            TargetSpec::Nginx { .. } if n == 0 => {
                Err("0 is too few worker processes for nginx (at least 1)".into())
            }
            TargetSpec::Go { .. } if n == 0 => {
                Err("0 is too few OS threads (GOMAXPROCS) for Go (at least 1)".into())
            }
            _ => Ok(()),
        }
    }

    /// Whether `--workers` means anything to this target: a command or a
    /// URL runs however it was written.
    pub fn takes_workers(&self) -> bool {
        matches!(
            self,
            TargetSpec::Model { .. } | TargetSpec::Nginx { .. } | TargetSpec::Go { .. }
        )
    }

    /// The path a `url:` target names; other targets request the
    /// sweep's `--path`.
    pub fn own_path(&self) -> Option<&str> {
        match self {
            TargetSpec::Url { path, .. } => Some(path),
            _ => None,
        }
    }

    /// Whether loadlab starts this target (and can pin it to CPUs and
    /// watch its processes).
    pub fn started_here(&self) -> bool {
        !matches!(self, TargetSpec::Url { .. })
    }
}

/// Where and how targets are started.
#[derive(Debug, Clone)]
pub struct StartContext {
    /// The loadlab binary that runs built-in models.
    pub exe: PathBuf,
    /// Directory with the embedded docroot on disk (served by nginx).
    pub docroot: PathBuf,
    /// The listen backlog nginx is given: the built-in models' own, so
    /// the comparison is like for like.
    pub backlog: i32,
}

/// A started target; stopping happens on drop.
#[derive(Debug)]
pub struct Running {
    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub base: String,
    /// Root of the target's process tree, when we started it.
    pub pid: Option<u32>,
    _proc: Option<ChildServer>,
    _nginx: Option<Nginx>,
}

impl Running {
    /// Starts the target. `stop` (Ctrl-C) ends any wait for it to come up;
    /// the error then says so and the caller checks `stop` itself.
    pub fn start(
        spec: &TargetSpec,
        ctx: &StartContext,
        workers: Option<usize>,
        cpus: Option<usize>,
        stop: &dyn Fn() -> bool,
    ) -> anyhow::Result<Running> {
        match spec {
            TargetSpec::Model { model, .. } => {
                let w = spec.workers(workers);
                let cmd = serve_command(&ctx.exe, model.name(), w);
                let mut p = ChildServer::spawn(cmd, cpus, Stdio::piped(), STOP_GRACE)?;
                let addr = match p.startup_addr(MODEL_START_LIMIT, stop) {
                    Ok(addr) => addr,
                    Err(NoAddress::Interrupted) => {
                        anyhow::bail!("interrupted while {spec} was starting")
                    }
                    Err(e @ NoAddress::TimedOut(_)) => {
                        anyhow::bail!("`loadlab serve` {e}{}", p.stderr_note())
                    }
                    Err(e @ NoAddress::Missing) => {
                        let exit = p.exit_text();
                        anyhow::bail!("`loadlab serve` {e}{exit}{}", p.stderr_note())
                    }
                };
                Ok(Running {
                    base: format!("http://{addr}"),
                    pid: Some(p.pid()),
                    _proc: Some(p),
                    _nginx: None,
                })
            }
            TargetSpec::Nginx { .. } => {
                let bin = find_nginx().ok_or_else(|| anyhow::anyhow!(INSTALL_HINT))?;
                let mut opts = NginxOptions::new(&ctx.docroot, ctx.backlog);
                opts.workers = spec.workers(workers);
                opts.affinity = cpus;
                let n = Nginx::start_until(&bin, &opts, stop)?;
                Ok(Running {
                    base: format!("http://{}", n.addr),
                    pid: Some(n.pid()),
                    _proc: None,
                    _nginx: Some(n),
                })
            }
            TargetSpec::Go { .. } => {
                let go = find_go().ok_or_else(|| anyhow::anyhow!(go::INSTALL_HINT))?;
                let bin = go::build(&go, &go::cache_dir())?;
                let threads = spec.workers(workers).to_string();
                Running::start_cmd(spec, cpus, stop, &|port| {
                    let mut cmd = Command::new(&bin);
                    cmd.arg(port.to_string())
                        .arg(&ctx.docroot)
                        .env("GOMAXPROCS", &threads);
                    cmd
                })
            }
            TargetSpec::Cmd { command } => Running::start_cmd(spec, cpus, stop, &|port| {
                let line = command
                    .replace("{port}", &port.to_string())
                    .replace("{root}", &ctx.docroot.to_string_lossy());
                let mut cmd = Command::new("sh");
                // exec: the pid we watch and signal is the server's own.
                cmd.args(["-c", &format!("exec {line}")]);
                cmd
            }),
            TargetSpec::Url { base, .. } => Ok(Running {
                base: base.clone(),
                pid: None,
                _proc: None,
                _nginx: None,
            }),
        }
    }

    /// Starts a target that is told its port (`cmd:`, `go`): `command`
    /// builds its command line for a port. The port was free when picked,
    /// but another process may bind it before the target does; then the
    /// target fails through no fault of its own and gets a fresh port.
    fn start_cmd(
        spec: &TargetSpec,
        cpus: Option<usize>,
        stop: &dyn Fn() -> bool,
        command: &dyn Fn(u16) -> Command,
    ) -> anyhow::Result<Running> {
        let mut attempt = 1;
        loop {
            match Running::start_on_port(spec, cpus, stop, command) {
                Err(e) if e.is::<PortTaken>() && attempt < CMD_PORT_ATTEMPTS => attempt += 1,
                result => return result,
            }
        }
    }

    /// One attempt of `start_cmd`, on a port picked for it.
    fn start_on_port(
        spec: &TargetSpec,
        cpus: Option<usize>,
        stop: &dyn Fn() -> bool,
        command: &dyn Fn(u16) -> Command,
    ) -> anyhow::Result<Running> {
        let port = free_port()?;
        let cmd = command(port);
        let mut p = ChildServer::spawn(cmd, cpus, Stdio::null(), STOP_GRACE)?;
        let addr = ([127, 0, 0, 1], port).into();
        match wait_accepting(addr, CMD_START_LIMIT, &mut p, stop) {
            Ok(()) => Ok(Running {
                base: format!("http://127.0.0.1:{port}"),
                pid: Some(p.pid()),
                _proc: Some(p),
                _nginx: None,
            }),
            Err(NotAccepting::Stopped) => {
                anyhow::bail!("interrupted while {spec} was starting")
            }
            Err(NotAccepting::Exited(status)) => {
                let why = format!(
                    "it exited ({status}) before accepting connections on port {port}{}",
                    p.stderr_note()
                );
                // Someone else holds the port now: most likely that is
                // why the command could not bind it.
                if TcpListener::bind(addr).is_err() {
                    return Err(anyhow::Error::new(PortTaken(port)).context(why));
                }
                anyhow::bail!(why)
            }
            Err(NotAccepting::TimedOut) => {
                // Stopped first, so its last words are in the tail.
                p.stop();
                anyhow::bail!(
                    "nothing accepted connections on port {port} within {} s{}",
                    CMD_START_LIMIT.as_secs(),
                    p.stderr_note()
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_prefork_workers_0_ran_one_worker() {
        // Each model: below its minimum refused in the spec, at it taken
        // (0 is a thread pool that grows; models without workers ignore it).
        for m in Model::ALL {
            let min = m.min_workers();
            if min > 0 {
                let spec = format!("model:{m}:workers={}", min - 1);
                let e = spec.parse::<TargetSpec>().unwrap_err();
                assert!(
                    e.starts_with(&format!("'{spec}': {} is too few", min - 1)),
                    "{e}"
                );
                assert!(e.ends_with(&format!("(at least {min})")), "{e}");
            }
            let spec = format!("model:{m}:workers={min}");
            assert!(spec.parse::<TargetSpec>().is_ok(), "{spec}");
        }
        assert!("model:prefork:workers=0".parse::<TargetSpec>().is_err());
        let e = "nginx:workers=0".parse::<TargetSpec>().unwrap_err();
        assert!(e.ends_with("(at least 1)"), "{e}");
        assert!("nginx:workers=1".parse::<TargetSpec>().is_ok());
    }

    #[test]
    fn a_url_target_keeps_its_own_path_apart_from_its_name() {
        let cases = [
            ("url:http://127.0.0.1:8080/20KB.html", "/20KB.html"),
            ("url:http://127.0.0.1:8080", "/"),
            ("url:http://127.0.0.1:8080/", "/"),
            ("url:http://127.0.0.1:8080/a?b=1", "/a?b=1"),
        ];
        for (text, path) in cases {
            let t: TargetSpec = text.parse().unwrap();
            assert_eq!(t.own_path(), Some(path), "{text}");
            let TargetSpec::Url { base, .. } = &t else {
                panic!("{text} is not a url target")
            };
            assert_eq!(base, "http://127.0.0.1:8080");
            assert_eq!(t.to_string(), "url:http://127.0.0.1:8080");
        }
        // https keeps its scheme (and its own default port).
        let t: TargetSpec = "url:https://127.0.0.1/x".parse().unwrap();
        assert_eq!(t.to_string(), "url:https://127.0.0.1");
        let model: TargetSpec = "model:event-loop".parse().unwrap();
        assert_eq!(model.own_path(), None);
    }
}
