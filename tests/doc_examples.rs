//! Every fenced `sh` block of README.md and docs/guide/*.md, run: `loadlab`
//! is the built binary, a server an example starts gets a free port, and
//! each block's `# => TEXT` lines must appear in what it printed. A block
//! with a `# not run: WHY` line (a cluster, minutes of load) is run
//! with `loadlab`, `cargo run`, `srun` and `kubectl` standing in, and every
//! `loadlab` command line it makes must pass the binary's own parser.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::Parser;

use crate::common::loadlab_bin;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The address examples give a server they start; the test swaps in a free port.
const EXAMPLE_ADDR: &str = "127.0.0.1:8080";
/// Longest a runnable block may take: each is meant to run in seconds.
const BLOCK_LIMIT: Duration = Duration::from_secs(60);
const NOT_RUN: &str = "# not run: ";
const EXPECT: &str = "# => ";

/// What a runnable block's shell has: `loadlab` the binary; run in the
/// background (`loadlab serve ... &`) it replaces its subshell, so `$!`
/// and `kill $!` reach the server itself.
const RUN_PRELUDE: &str = r#"set -eo pipefail
loadlab() { if [ "$BASHPID" != "$$" ]; then exec "$LOADLAB" "$@"; fi; "$LOADLAB" "$@"; }
wait_port() {
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
  echo "nothing listens on port $1" >&2; return 1
}
"#;

/// What a not-run block's shell has: each `loadlab` command line is
/// recorded (arguments NUL-separated, lines by RS) to be parsed, and the
/// cluster's tools are stand-ins that pass the loadlab part on.
const DRY_PRELUDE: &str = r#"set -eo pipefail
loadlab() { printf '%s\0' "$@" >> "$DRY"; printf '\036' >> "$DRY"; }
cargo() {
  [ "$1 $2" = "run --release" ] || { echo "cargo $*: not a loadlab run" >&2; return 1; }
  shift 2; [ "${1-}" = -- ] && shift; loadlab "$@"
}
srun() { while [ $# -gt 0 ] && [ "$1" != loadlab ]; do shift; done; [ $# -gt 0 ] || return 1; shift; loadlab "$@"; }
kubectl() { :; }
"#;

struct Block {
    /// `README.md:12`, where the block opens.
    at: String,
    body: String,
    not_run: bool,
}

impl Block {
    fn expected(&self) -> Vec<&str> {
        let lines = self.body.lines().map(str::trim_start);
        lines.filter_map(|l| l.strip_prefix(EXPECT)).collect()
    }
}

fn doc_files() -> Vec<String> {
    let mut files = vec!["README.md".to_string()];
    let mut guide: Vec<String> = std::fs::read_dir(format!("{ROOT}/docs/guide"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/guide/{n}"))
        .collect();
    guide.sort();
    files.extend(guide);
    files
}

/// The fenced blocks whose info string starts with `sh`.
fn blocks() -> Vec<Block> {
    let mut found = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(format!("{ROOT}/{file}")).unwrap();
        let mut open: Option<(usize, String)> = None;
        for (i, line) in text.lines().enumerate() {
            match &mut open {
                None if line.starts_with("```sh") => open = Some((i + 1, String::new())),
                Some((at, body)) if line.starts_with("```") => {
                    let not_run = body.lines().any(|l| l.trim_start().starts_with(NOT_RUN));
                    let at = format!("{file}:{at}");
                    found.push(Block {
                        at,
                        body: std::mem::take(body),
                        not_run,
                    });
                    open = None;
                }
                Some((_, body)) => {
                    body.push_str(line);
                    body.push('\n');
                }
                None => {}
            }
        }
    }
    found
}

/// A port free a moment ago, for one block's server.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Runs `script` under bash in `dir`, in its own process group, killed
/// with everything it started when it ends or passes BLOCK_LIMIT.
fn bash(script: &str, dir: &Path, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script).current_dir(dir).process_group(0);
    cmd.env("HOME", dir)
        .env("XDG_DATA_HOME", dir)
        .env("XDG_CACHE_HOME", dir);
    cmd.envs(env.iter().copied());
    let out = tempfile::tempfile().unwrap();
    cmd.stdout(out.try_clone().unwrap())
        .stderr(out.try_clone().unwrap());
    let mut child = cmd.stdin(Stdio::null()).spawn().unwrap();
    let start = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if start.elapsed() > BLOCK_LIMIT {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: kill(2) on the group this test made; no memory is touched.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
    let mut printed = String::new();
    let mut out = out;
    use std::io::Seek;
    out.seek(std::io::SeekFrom::Start(0)).unwrap();
    out.read_to_string(&mut printed).unwrap();
    (code, printed)
}

/// Runs one runnable block; Err says what went wrong.
fn run(block: &Block) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().to_string();
    let mut script = String::from(RUN_PRELUDE);
    for line in block.body.lines() {
        script.push_str(&line.replace(EXAMPLE_ADDR, &format!("127.0.0.1:{port}")));
        script.push('\n');
        // The server's start-up takes milliseconds; the next line needs it.
        if line.starts_with("loadlab serve") && line.trim_end().ends_with('&') {
            script.push_str(&format!("wait_port {port}\n"));
        }
    }
    let (code, printed) = bash(&script, dir.path(), &[("LOADLAB", loadlab_bin())]);
    if code != Some(0) {
        return Err(format!("{}: exit {code:?}\n{printed}", block.at));
    }
    match block
        .expected()
        .into_iter()
        .find(|want| !printed.contains(want))
    {
        Some(want) => Err(format!("{}: printed no {want:?}\n{printed}", block.at)),
        None => Ok(()),
    }
}

/// Runs one not-run block with the stand-ins and parses each loadlab
/// command line it made.
fn parse(block: &Block) -> Result<usize, String> {
    let dir = tempfile::tempdir().unwrap();
    let mut script = String::from(DRY_PRELUDE);
    for line in block.body.lines() {
        // A repository script (scripts/test.sh) must exist; it is not run.
        let first = line.split_whitespace().next().unwrap_or("");
        if first.starts_with("scripts/") {
            let meta = std::fs::metadata(format!("{ROOT}/{first}"));
            if !meta.is_ok_and(|m| {
                std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
            }) {
                return Err(format!("{}: {first} is not an executable script", block.at));
            }
            continue;
        }
        script.push_str(line);
        script.push('\n');
    }
    let record = dir.path().join("commands");
    let (code, printed) = bash(&script, dir.path(), &[("DRY", record.to_str().unwrap())]);
    if code != Some(0) {
        return Err(format!("{}: exit {code:?}\n{printed}", block.at));
    }
    let made = std::fs::read(&record).unwrap_or_default();
    let lines: Vec<&[u8]> = made
        .split(|&b| b == 0x1e)
        .filter(|l| !l.is_empty())
        .collect();
    for line in &lines {
        let args = line.split(|&b| b == 0).filter(|a| !a.is_empty());
        let args: Vec<String> = args
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let argv = std::iter::once("loadlab".to_string()).chain(args.iter().cloned());
        if let Err(e) = loadlab::cli::Cli::try_parse_from(argv) {
            return Err(format!("{}: loadlab {}: {e}", block.at, args.join(" ")));
        }
    }
    Ok(lines.len())
}

/// Every runnable example runs (two at a time: some are short sweeps),
/// exits 0 and prints what its `# =>` lines say.
#[test]
fn every_example_runs_and_prints_what_it_says() {
    let runnable: Vec<Block> = blocks().into_iter().filter(|b| !b.not_run).collect();
    assert!(
        runnable.len() >= 10,
        "only {} runnable examples",
        runnable.len()
    );
    for b in &runnable {
        assert!(
            !b.expected().is_empty(),
            "{}: no `# => ` line says what it prints",
            b.at
        );
    }
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Some(b) = runnable.get(next.fetch_add(1, Ordering::SeqCst)) {
                    if let Err(e) = run(b) {
                        failures.lock().unwrap().push(e);
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Every example marked not run still makes loadlab command lines the
/// binary's parser accepts, and at least one.
#[test]
fn every_example_not_run_parses() {
    let dry: Vec<Block> = blocks().into_iter().filter(|b| b.not_run).collect();
    assert!(
        dry.len() >= 10,
        "only {} examples marked not run",
        dry.len()
    );
    for b in &dry {
        match parse(b) {
            Ok(0) => panic!("{}: makes no loadlab command", b.at),
            Ok(_) => {}
            Err(e) => panic!("{e}"),
        }
    }
}
