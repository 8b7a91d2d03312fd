//! A cell's load as N shards (`sweep --shards N`): N local `loadlab
//! bench --shard i/N` processes, or one launcher command (`srun -n {n}`)
//! that starts N `--shard auto` tasks; every shard starts measuring at one
//! common time and writes its JSON, and the files are merged through
//! `bench::combine` (the checks `loadlab merge` makes) before the row is
//! written. A shard that is missing, or a launcher that fails, stops the
//! sweep: a row from fewer shards would look like a whole one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::bench::clock::unix_ms;
use crate::bench::combine;
use crate::bench::BenchResult;
use crate::proc::child::ChildServer;

/// How a sweep spreads each cell's load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardPlan {
    /// Shards per cell (`--shards`).
    pub count: u32,
    /// Command that starts `{n}` tasks of the bench command (`--launcher`);
    /// None: `count` local processes.
    pub launcher: Option<String>,
    /// The sweep's results directory: each run's shards write their JSON
    /// into `shards/run-ID/` there (kept, so `loadlab merge` can redo a
    /// row), and tasks on other nodes must see it (a shared filesystem).
    pub files_in: PathBuf,
}

/// Placeholder in `--launcher` for the number of tasks to start.
pub const COUNT_PLACEHOLDER: &str = "{n}";
/// Placeholder in `--launcher` for the (shell-quoted) bench command; the
/// command goes at the end when the launcher does not place it.
pub const COMMAND_PLACEHOLDER: &str = "{cmd}";

/// How far ahead of now local shards are told to start measuring: a
/// process starts and connects in a few milliseconds, even on a busy
/// 2-core host.
pub const LOCAL_START_DELAY: Duration = Duration::from_millis(500);
/// How far ahead launched shards are told to start: srun allocates, starts
/// a step and execs every task first (0.3-1 s on the one-node test
/// cluster), and a shard that comes late is measured late, not lost.
pub const LAUNCHED_START_DELAY: Duration = Duration::from_secs(3);
/// Between SIGTERM to a shard's (or the launcher's) process group and
/// SIGKILL, when the sweep is interrupted.
pub const SHARD_GRACE: Duration = Duration::from_secs(2);
/// How often the shards are polled for their end and for Ctrl-C.
const POLL: Duration = Duration::from_millis(20);

/// Checks `--shards` and `--launcher` before any target starts: one line
/// for the user when they cannot work.
pub fn check(plan: &ShardPlan, least_concurrency: usize) -> Result<(), String> {
    if plan.count < 1 {
        return Err("--shards must be at least 1".into());
    }
    if plan.count as usize > least_concurrency {
        return Err(format!(
            "--shards {} is more than --concurrency {least_concurrency}: every shard needs a connection",
            plan.count
        ));
    }
    if let Some(l) = &plan.launcher {
        if l.trim().is_empty() {
            return Err("--launcher is empty".into());
        }
        if plan.count > 1 && !l.contains(COUNT_PLACEHOLDER) {
            return Err(format!(
                "--launcher '{l}' has no {COUNT_PLACEHOLDER}: it must start --shards {} tasks, e.g. 'srun -n {COUNT_PLACEHOLDER}'",
                plan.count
            ));
        }
    }
    Ok(())
}

/// What each shard runs, before its shard and output file are added.
#[derive(Debug, Clone)]
pub struct ShardLoad {
    pub url: String,
    pub requests: Option<u64>,
    pub duration: Option<Duration>,
    pub concurrency: usize,
    pub keep_alive: bool,
    /// Open loop: the whole load's offered rate (each shard takes its
    /// share).
    pub rate: Option<f64>,
    pub timeout: Duration,
    /// Load threads per shard (None: bench's default, one per core).
    pub threads: Option<usize>,
}

impl ShardLoad {
    /// `loadlab bench` arguments for the whole load (every shard takes its
    /// share of -n and -c), measuring from `start`, JSON into `out`.
    fn args(&self, start: SystemTime, out: &Path) -> Vec<String> {
        let mut a: Vec<String> = vec!["bench".into(), "-q".into()];
        if let Some(n) = self.requests {
            a.extend(["-n".into(), n.to_string()]);
        }
        if let Some(d) = self.duration {
            a.extend(["-t".into(), d.as_secs_f64().to_string()]);
        }
        a.extend(["-c".into(), self.concurrency.to_string()]);
        if self.keep_alive {
            a.push("-k".into());
        }
        if let Some(r) = self.rate {
            a.extend(["--rate".into(), r.to_string()]);
        }
        a.extend(["-s".into(), self.timeout.as_secs_f64().to_string()]);
        if let Some(t) = self.threads {
            a.extend(["--threads".into(), t.to_string()]);
        }
        a.extend([
            "--start-at".into(),
            format!("{:.0}", unix_ms(start)),
            "--format".into(),
            "json".into(),
            "--out".into(),
            out.display().to_string(),
            self.url.clone(),
        ]);
        a
    }
}

/// Under the results directory: one directory per sharded run.
pub const SHARDS_DIR: &str = "shards";

/// Where run `run_id`'s shards write their JSON, relative to the results
/// directory.
pub fn run_dir(run_id: u64) -> PathBuf {
    Path::new(SHARDS_DIR).join(format!("run-{run_id}"))
}

/// The file shard `index` writes in `dir` (`{shard}` for bench to expand).
fn shard_file(dir: &Path, index: &str) -> PathBuf {
    dir.join(format!("shard-{index}.json"))
}

/// Runs `load` as `plan.count` shards (run `run_id` of the sweep) and
/// merges them (the merged result carries the busiest shard's client
/// figures). Err: the sweep cannot go on (a launcher or shard failed, a
/// file is missing, the files do not merge), in one line. `Ok(None)`:
/// `stop` came first.
pub fn run(
    plan: &ShardPlan,
    run_id: u64,
    exe: &Path,
    load: &ShardLoad,
    stop: &(dyn Fn() -> bool + Sync),
) -> anyhow::Result<Option<BenchResult>> {
    let within = plan.files_in.join(run_dir(run_id));
    // A run interrupted before its row was written left files under the
    // id a resumed sweep gives the next run: they are not this run's.
    if within.exists() {
        std::fs::remove_dir_all(&within)?;
    }
    // Absolute: a launcher's tasks need not start in this directory.
    let dir = std::fs::create_dir_all(&within)
        .and_then(|()| std::fs::canonicalize(&within))
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot make {} for the shards' files: {e}",
                within.display()
            )
        })?;
    let delay = match plan.launcher {
        Some(_) => LAUNCHED_START_DELAY,
        None => LOCAL_START_DELAY,
    };
    let args = load.args(SystemTime::now() + delay, &shard_file(&dir, "{shard}"));
    let mut children = Vec::new();
    match &plan.launcher {
        None => {
            for i in 0..plan.count {
                let mut cmd = Command::new(exe);
                cmd.args(&args)
                    .args(["--shard", &format!("{i}/{}", plan.count)]);
                children.push((format!("shard {i}/{}", plan.count), spawn(cmd)?));
            }
        }
        Some(template) => {
            let line = launcher_line(template, plan.count, exe, &args);
            let mut cmd = Command::new("sh");
            cmd.args(["-c", &line]);
            children.push((format!("--launcher '{template}'"), spawn(cmd)?));
        }
    }
    for (what, child) in &mut children {
        let status = loop {
            if stop() {
                return Ok(None);
            }
            if let Some(s) = child.exited() {
                break s;
            }
            std::thread::sleep(POLL);
        };
        if !status.success() {
            anyhow::bail!(
                "{what} failed ({status}){}; the cell's row is not written from fewer shards",
                child.stderr_note()
            );
        }
    }
    let files: Vec<PathBuf> = (0..plan.count)
        .map(|i| shard_file(&dir, &i.to_string()))
        .collect();
    let mut shards = Vec::new();
    for (i, f) in files.iter().enumerate() {
        if !f.exists() {
            anyhow::bail!(
                "shard {i} of {n} wrote no result ({} is missing): did the launcher start {n} tasks with SLURM_PROCID/SLURM_NTASKS (or JOB_COMPLETION_INDEX/LOADLAB_SHARDS) set, all seeing that directory?",
                f.display(),
                n = plan.count
            );
        }
        shards.push(combine::read(f).map_err(anyhow::Error::msg)?);
    }
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let merged = combine::merge(&names, &shards, false).map_err(anyhow::Error::msg)?;
    Ok(Some(merged.result))
}

/// A shard process or the launcher, in its own process group so that
/// stopping it stops everything it started.
fn spawn(cmd: Command) -> anyhow::Result<ChildServer> {
    ChildServer::spawn(cmd, None, Stdio::null(), SHARD_GRACE)
}

/// The launcher's shell line: `{n}` the task count, the bench command
/// (each word single-quoted) at `{cmd}` or at the end, with `--shard auto`
/// so every task finds its index in the launcher's environment.
fn launcher_line(template: &str, count: u32, exe: &Path, args: &[String]) -> String {
    let words = std::iter::once(exe.display().to_string())
        .chain(args.iter().cloned())
        .chain(["--shard".into(), "auto".into()]);
    let command = words.map(|w| quote(&w)).collect::<Vec<_>>().join(" ");
    let line = template.replace(COUNT_PLACEHOLDER, &count.to_string());
    match line.contains(COMMAND_PLACEHOLDER) {
        true => line.replace(COMMAND_PLACEHOLDER, &command),
        false => format!("{line} {command}"),
    }
}

/// One word for sh, in single quotes.
fn quote(w: &str) -> String {
    format!("'{}'", w.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_lines_place_the_count_and_the_command() {
        let args = vec!["bench".to_string(), "it's".to_string()];
        let exe = Path::new("/bin/loadlab");
        assert_eq!(
            launcher_line("srun -n {n} --overcommit", 2, exe, &args),
            "srun -n 2 --overcommit '/bin/loadlab' 'bench' 'it'\\''s' '--shard' 'auto'"
        );
        assert_eq!(
            launcher_line("env A=1 {cmd} # {n}", 3, exe, &args[..1]),
            "env A=1 '/bin/loadlab' 'bench' '--shard' 'auto' # 3"
        );
    }

    #[test]
    fn bad_shard_plans_get_one_line() {
        let plan = |count, launcher: Option<&str>| ShardPlan {
            count,
            launcher: launcher.map(String::from),
            files_in: PathBuf::from("out"),
        };
        assert_eq!(check(&plan(2, Some("srun -n {n}")), 2), Ok(()));
        assert_eq!(check(&plan(1, Some("ssh host")), 1), Ok(()));
        for (p, c, says) in [
            (plan(0, None), 4, "at least 1"),
            (plan(3, None), 2, "more than --concurrency 2"),
            (plan(2, Some("srun")), 4, "has no {n}"),
            (plan(2, Some(" ")), 4, "empty"),
        ] {
            let e = check(&p, c).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{p:?}: {e}");
        }
    }
}
