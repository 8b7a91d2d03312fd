//! Go's net/http as a reference server (examples/go/server.go, embedded):
//! found on the machine, built once with `go build` into a cache directory
//! keyed by the source's and the toolchain's hash, so a sweep starts a
//! binary rather than `go run`, which compiles at every start and can
//! outlast a target's start-up limit on a busy two-core machine.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// The server's source, embedded so that the `go` target works wherever
/// loadlab runs, not only in a checkout.
pub const SERVER_SOURCE: &str = include_str!("../../examples/go/server.go");

/// What to tell the user when go is missing.
pub const INSTALL_HINT: &str =
    "go is not installed; install it with `apt-get install golang-go` to compare against Go's net/http";

/// Names the go binary to use instead of searching PATH; a path that is
/// not a file means "go is not installed" (tests use this to take the path
/// a machine without go takes).
pub const GO_ENV: &str = "LOADLAB_GO";

/// How long one `go build` may take: about 0.5 s with Debian's prebuilt
/// standard library, far longer on a cold cache on two busy cores, but
/// never without end.
const BUILD_LIMIT: Duration = Duration::from_secs(300);

/// Bytes of go's output kept for an error: its first complaints.
const BUILD_OUTPUT_BYTES: u64 = 2048;

/// Lines of go's output quoted in an error (on one line).
const BUILD_OUTPUT_LINES: usize = 3;

/// How often a build is checked for having finished.
const POLL: Duration = Duration::from_millis(20);

/// The go binary, if installed (Debian's golang-go links it into
/// /usr/bin; a tarball unpacks to /usr/local/go), or the one `LOADLAB_GO`
/// names.
pub fn find_go() -> Option<PathBuf> {
    super::which::find_program(GO_ENV, "go", &["/usr/bin/go", "/usr/local/go/bin/go"])
}

/// Where built servers are kept: `$XDG_CACHE_HOME/loadlab/go`, else
/// `~/.cache/loadlab/go`, else a directory under the system's temp dir
/// (a CI job may have no HOME).
pub fn cache_dir() -> PathBuf {
    let var = |k| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(x) = var("XDG_CACHE_HOME") {
        return x.join("loadlab").join("go");
    }
    if let Some(h) = var("HOME") {
        return h.join(".cache").join("loadlab").join("go");
    }
    // SAFETY: getuid cannot fail and touches no memory.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir().join(format!("loadlab-go-{uid}"))
}

/// The built server for `go` in `cache`, built now unless a build of this
/// source with this toolchain is there already. The binary appears
/// whole (built beside it, then renamed) or not at all.
pub fn build(go: &Path, cache: &Path) -> anyhow::Result<PathBuf> {
    build_source(go, cache, SERVER_SOURCE)
}

/// `build` of any one-file server (tests give it a broken one).
fn build_source(go: &Path, cache: &Path, source: &str) -> anyhow::Result<PathBuf> {
    let version = go_version(go)?;
    let key = Sha256::new()
        .chain_update(source.as_bytes())
        .chain_update(version.as_bytes())
        .finalize();
    let hex: String = key[..8].iter().map(|b| format!("{b:02x}")).collect();
    let bin = cache.join(format!("server-{hex}"));
    if bin.is_file() {
        return Ok(bin);
    }
    std::fs::create_dir_all(cache)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", cache.display()))?;
    let work = tempfile::Builder::new()
        .prefix("build-")
        .tempdir_in(cache)
        .map_err(|e| anyhow::anyhow!("cannot build in {}: {e}", cache.display()))?;
    std::fs::write(work.path().join("server.go"), source)?;
    let mut cmd = go_command(go, cache);
    cmd.current_dir(work.path())
        .args(["build", "-o", "server", "server.go"]);
    run_build(cmd)?;
    // A concurrent build of the same key may have won; either binary is
    // the same program.
    std::fs::rename(work.path().join("server"), &bin)
        .map_err(|e| anyhow::anyhow!("cannot keep the built Go server: {e}"))?;
    Ok(bin)
}

/// `go` with a build cache and GOPATH of its own under `cache` unless the
/// caller set them: a root-less or HOME-less CI has no default ones.
fn go_command(go: &Path, cache: &Path) -> Command {
    let mut cmd = Command::new(go);
    for (var, dir) in [("GOCACHE", "gocache"), ("GOPATH", "gopath")] {
        if !matches!(std::env::var_os(var), Some(v) if !v.is_empty()) {
            cmd.env(var, cache.join(dir));
        }
    }
    // The toolchain installed is the one measured: never a download.
    cmd.env("GOTOOLCHAIN", "local").env("GO111MODULE", "off");
    cmd
}

/// `go version`'s line, which keys the cache with the source.
fn go_version(go: &Path) -> anyhow::Result<String> {
    let out = Command::new(go)
        .arg("version")
        .env("GOTOOLCHAIN", "local")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", go.display()))?;
    if !out.status.success() {
        anyhow::bail!("`{} version` failed ({})", go.display(), out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs `go build`, bounded by `BUILD_LIMIT`; an error is one line with
/// go's first complaints.
fn run_build(mut cmd: Command) -> anyhow::Result<()> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot run go build: {e}"))?;
    // Read on a thread: a long error must not fill the pipe and stall go.
    let stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut s) = stderr {
            let _ = s
                .by_ref()
                .take(BUILD_OUTPUT_BYTES)
                .read_to_string(&mut text);
            let _ = std::io::copy(&mut s, &mut std::io::sink());
        }
        text
    });
    let until = Instant::now() + BUILD_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(POLL);
    };
    let text = reader.join().unwrap_or_default();
    let said: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(BUILD_OUTPUT_LINES)
        .collect();
    let said = match said.join(" / ") {
        s if s.is_empty() => String::new(),
        s => format!(": {s}"),
    };
    match status {
        Some(s) if s.success() => Ok(()),
        Some(s) => anyhow::bail!("go build of the Go net/http server failed ({s}){said}"),
        None => anyhow::bail!(
            "go build of the Go net/http server took over {} s{said}",
            BUILD_LIMIT.as_secs()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn go() -> PathBuf {
        find_go()
            .unwrap_or_else(|| panic!("{INSTALL_HINT} (the tests need it; .ci/run installs it)"))
    }

    /// The entries of `dir` other than go's own caches.
    fn built(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "gocache" && n != "gopath")
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_server_is_built_once_and_an_edit_rebuilds_it() {
        let cache = tempfile::tempdir().unwrap();
        let first = build(&go(), cache.path()).unwrap();
        let modified = std::fs::metadata(&first).unwrap().modified().unwrap();
        let again = build(&go(), cache.path()).unwrap();
        assert_eq!(first, again);
        assert_eq!(
            std::fs::metadata(&again).unwrap().modified().unwrap(),
            modified,
            "a second build of the same source rebuilt it"
        );
        let edited = format!("{SERVER_SOURCE}\n// an edit\n");
        let other = build_source(&go(), cache.path(), &edited).unwrap();
        assert_ne!(other, first, "an edited source reused the old binary");
        // The two binaries and nothing half-built.
        let names = built(cache.path());
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.iter().all(|n| n.starts_with("server-")), "{names:?}");
    }

    #[test]
    fn a_failed_build_is_one_line_and_leaves_no_binary() {
        let cache = tempfile::tempdir().unwrap();
        let broken = "package main\n\nfunc main() { undefined_name() }\n";
        let e = build_source(&go(), cache.path(), broken)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("go build of the Go net/http server failed (exit status: "),
            "{e}"
        );
        assert!(e.contains("undefined: undefined_name"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        assert_eq!(built(cache.path()), Vec::<String>::new());
    }
}
