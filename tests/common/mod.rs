//! Shared test support: start a real `loadlab serve` on 127.0.0.1 port 0,
//! talk to it over raw sockets, and stop it. Each test gets its own server
//! process and its own temp directory, so tests run in parallel.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use loadlab::catalog::models::Model;

/// Generates `mod <model> { #[test] fn <group>() }` for every model, so
/// one conformance suite runs against each (as ripgrep runs each test per
/// engine) and every model's failure shows on its own, plus a test that
/// holds the list to the registry's: a model added there and not here
/// fails it. Macros need identifiers, so this is the one list of models
/// outside the registry; an identifier is the model's name with `-` as
/// `_` (`r#` for a keyword). Use with `#[macro_use] mod common;`.
#[allow(unused_macros)]
macro_rules! per_model {
    ($($group:ident),* $(,)?) => {
        per_model!(@models [
            iterative,
            thread_per_conn,
            thread_pool,
            prefork,
            event_loop,
            reactors,
            r#async,
            async_local,
            io_uring
        ] [$($group),*]);
    };
    (@models [$($m:ident),*] $groups:tt) => {
        $(per_model!(@model $m, $groups);)*

        #[test]
        fn per_model_runs_every_model() {
            let generated = [$(crate::common::model_name(stringify!($m))),*];
            assert_eq!(
                generated.as_slice(),
                crate::common::MODELS.as_slice(),
                "per_model! must name every model of the registry, in its order"
            );
        }
    };
    (@model $m:ident, [$($group:ident),*]) => {
        mod $m {
            $(
                #[test]
                fn $group() {
                    super::$group(&crate::common::model_name(stringify!($m)))
                }
            )*
        }
    };
}

/// The model name a `per_model!` identifier stands for.
pub fn model_name(ident: &str) -> String {
    ident.trim_start_matches("r#").replace('_', "-")
}

/// Every model, by its CLI name, in registry order.
pub const MODELS: [&str; Model::ALL.len()] = {
    let mut names = [""; Model::ALL.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = Model::ALL[i].name();
        i += 1;
    }
    names
};

pub fn loadlab_bin() -> &'static str {
    env!("CARGO_BIN_EXE_loadlab")
}

/// A running `loadlab serve` child process, stopped on drop.
pub struct TestServer {
    pub child: Child,
    pub addr: SocketAddr,
    /// The whole startup line, e.g. `listening on http://... model=... workers=...`.
    pub line: String,
    /// The upload directory `start` gives each server, removed on drop, so
    /// no two tests share the default data directory.
    pub files: Option<tempfile::TempDir>,
}

impl TestServer {
    /// Starts `loadlab serve --model MODEL --addr 127.0.0.1:0 EXTRA...`.
    pub fn start(model: &str, extra: &[&str]) -> TestServer {
        let mut args = vec!["serve", "--model", model, "--addr", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let files = (!extra.contains(&"--files")).then(|| tempfile::tempdir().expect("tempdir"));
        let dir = files
            .as_ref()
            .map(|d| d.path().to_str().expect("utf-8 temp path"));
        if let Some(dir) = dir {
            args.extend_from_slice(&["--files", dir]);
        }
        let mut server = Self::start_args(&args);
        server.files = files;
        server
    }

    /// Starts the binary with exactly these arguments; the first stdout line
    /// must be the `listening on http://ADDR ...` line.
    pub fn start_args(args: &[&str]) -> TestServer {
        let mut cmd = Command::new(loadlab_bin());
        cmd.args(args);
        Self::start_command(cmd)
    }

    /// Starts a prepared command whose process prints the startup line, e.g.
    /// `sh -c 'ulimit -n 64; exec loadlab serve ...'` (with `exec`, the pid
    /// is the server's).
    pub fn start_command(mut cmd: Command) -> TestServer {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn loadlab");
        let stdout = child.stdout.take().expect("stdout");
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        reader.read_line(&mut line).expect("read startup line");
        let line = line.trim_end().to_string();
        let addr = loadlab::proc::child::parse_startup_line(&line)
            .unwrap_or_else(|| panic!("unexpected startup line: {line:?}"));
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = reader.read_to_end(&mut sink);
        });
        TestServer {
            child,
            addr,
            line,
            files: None,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    /// Sends SIGTERM and waits (bounded) for the exit status code.
    pub fn terminate(&mut self) -> Option<i32> {
        unsafe { libc_kill(self.pid(), 15) };
        let until = Instant::now() + Duration::from_secs(40);
        while Instant::now() < until {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            unsafe { libc_kill(self.pid(), 15) };
            let until = Instant::now() + Duration::from_secs(3);
            while Instant::now() < until {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// Sends a signal to a process (tests use it for prefork workers too).
pub fn send_signal(pid: i32, sig: i32) -> bool {
    unsafe { libc_kill(pid, sig) == 0 }
}

/// A parsed HTTP response as read off a raw socket.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one response from `stream`, using Content-Length (or reading to
/// EOF without one). `head_request` means no body follows. Interim 1xx
/// responses are returned like any other.
pub fn read_response(stream: &mut impl Read, head_request: bool) -> std::io::Result<RawResponse> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("eof after {:?}", String::from_utf8_lossy(&buf)),
            ));
        }
        buf.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&buf).to_string();
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut resp = RawResponse {
        status,
        headers,
        body: Vec::new(),
    };
    if head_request || (100..200).contains(&status) || status == 204 || status == 304 {
        return Ok(resp);
    }
    if resp
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        resp.body = read_chunked(stream)?;
        return Ok(resp);
    }
    match resp
        .header("content-length")
        .map(|v| v.parse::<usize>().unwrap())
    {
        Some(len) => {
            resp.body.resize(len, 0);
            stream.read_exact(&mut resp.body)?;
        }
        None => {
            stream.read_to_end(&mut resp.body)?;
        }
    }
    Ok(resp)
}

/// Reads a chunked body (the server sends no extensions or trailers).
fn read_chunked(stream: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while !line.ends_with(b"\r\n") {
            stream.read_exact(&mut byte)?;
            line.push(byte[0]);
        }
        let text = String::from_utf8_lossy(&line[..line.len() - 2]).to_string();
        let size = usize::from_str_radix(text.trim(), 16).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("chunk size {text:?}"),
            )
        })?;
        let mut piece = vec![0u8; size + 2];
        stream.read_exact(&mut piece)?;
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(&piece[..size]);
    }
}

/// Opens a connection, writes `raw`, reads one response.
pub fn exchange(server: &TestServer, raw: &[u8]) -> RawResponse {
    let mut s = server.connect();
    s.write_all(raw).unwrap();
    read_response(&mut s, raw.starts_with(b"HEAD ")).unwrap()
}

/// True if the peer has closed the connection (EOF within `wait`).
pub fn is_closed(stream: &mut TcpStream, wait: Duration) -> bool {
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut b = [0u8; 1];
    matches!(stream.read(&mut b), Ok(0) | Err(_)) && {
        // Distinguish a timeout (still open) from EOF/reset.
        match stream.read(&mut b) {
            Ok(0) => true,
            Err(e) => !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            Ok(_) => false,
        }
    }
}

/// A simple GET on a fresh connection must answer 200: the server survived.
pub fn assert_alive(server: &TestServer) {
    let r = exchange(
        server,
        b"GET /500B.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200, "server no longer answers a good request");
    assert_eq!(r.body.len(), 500);
}

/// Runs a command-line tool, panicking with a clear message if it is not
/// installed (`.ci/run` installs curl, ab, nginx and wrk).
/// The Debian package a tool the tests run comes from, for the message a
/// missing tool fails with.
fn package_of(tool: &str) -> &'static str {
    match tool {
        "ab" => "apache2-utils",
        "setpriv" | "prlimit" | "mount" => "util-linux",
        "script" => "bsdutils",
        "pgrep" => "procps",
        "nginx" => "nginx",
        "wrk" => "wrk",
        "curl" => "curl",
        "python3" => "python3",
        "chromium" => "chromium",
        _ => "the package that has it",
    }
}

pub fn tool(name: &str) -> Command {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false)
        || std::path::Path::new("/usr/sbin").join(name).is_file();
    assert!(
        found,
        "`{name}` is not installed: apt-get install -y {} (.ci/run installs it)",
        package_of(name)
    );
    Command::new(name)
}

/// The nginx the lab would start. A test that compares against nginx fails
/// without it, naming the install step: it never passes by measuring less.
pub fn require_nginx() -> std::path::PathBuf {
    loadlab::proc::nginx::find_nginx().unwrap_or_else(|| {
        panic!("nginx is not installed: this test compares against it (apt-get install -y nginx; .ci/run installs it)")
    })
}

/// Writes `data`, ignoring errors: a server may answer and close before it
/// has read a request (431, 413), and the test wants that answer.
pub fn write_ignoring_errors(stream: &mut TcpStream, data: &[u8]) {
    let _ = stream.write_all(data);
}

/// Reads what is left on the connection until EOF or `wait` passes with
/// nothing new. Used to prove that no further response was sent.
pub fn read_rest(stream: &mut TcpStream, wait: Duration) -> Vec<u8> {
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Child processes of `pid` (all its threads), from
/// /proc/PID/task/TID/children.
pub fn child_pids(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
        }
    }
    out.sort_unstable();
    out
}

/// Threads of `pid`, counted in /proc/PID/task.
pub fn thread_count(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// CPU time (user + system, in clock ticks) used by `pid` and its live
/// children, from /proc/PID/stat fields 14 and 15.
pub fn cpu_ticks(pid: i32) -> u64 {
    let own = |pid: i32| -> u64 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return 0;
        };
        // The command name (field 2) may contain spaces; fields after the
        // closing parenthesis start at field 3.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let get = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        get(11) + get(12)
    };
    own(pid) + child_pids(pid).into_iter().map(own).sum::<u64>()
}

/// Open descriptors of `pid`.
pub fn fd_count(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Held by each test in nextest's `socket-memory` group (echo_memory's
/// holds, the slow readers beside a normal client), so that under `cargo
/// test` too they run one at a time: each fills hundreds of MiB of kernel
/// socket buffers, and two at once put TCP memory under pressure.
pub fn socket_memory_turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

pub mod bench;
pub mod browser;
pub mod fake;
pub mod sansio;
pub mod schema;
pub mod shards;
pub mod strace;
pub mod tls;
pub mod zoo;

/// Every process below `root`, from the parent pid in each /proc/PID/stat
/// (the per-thread `children` files can miss a child that a thread other
/// than the one that forked it now parents).
pub fn descendants(root: i32) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let ppid = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parents.iter().filter(|&&(_, pp)| pp == p).map(|&(c, _)| c));
        i += 1;
    }
    out.remove(0);
    out
}

/// Whether `pid` runs (exists and is not a zombie).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Every file `loadlab report` derives in `dir` (summaries, page, charts),
/// by path relative to it. Every derived file's bytes, by path relative to the directory.
pub fn derived(dir: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    for name in ["summary.csv", "summary.json", "summary.md", "index.html"] {
        out.insert(
            std::path::PathBuf::from(name),
            std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}")),
        );
    }
    for e in std::fs::read_dir(dir.join("charts")).expect("charts/ exists") {
        let p = e.expect("dir entry").path();
        let rel = std::path::PathBuf::from("charts").join(p.file_name().expect("name"));
        out.insert(rel, std::fs::read(&p).expect("read chart"));
    }
    out
}

/// Test content that differs from offset to offset (and from block to
/// block), so a misplaced or repeated piece shows.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i % 251) as u8 ^ (i >> 16) as u8)
        .collect()
}

/// Starts `GET path` through a small receive buffer, so most of a large
/// response is still on the server afterwards, and reads until at least
/// `first` bytes arrived. Returns the connection and what was read.
pub fn start_slow_download(addr: SocketAddr, path: &str, first: usize) -> (TcpStream, Vec<u8>) {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(32 * 1024).unwrap();
    sock.connect(&addr.into()).unwrap();
    let mut s: TcpStream = sock.into();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
        .unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    while got.len() < first {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "EOF early");
        got.extend_from_slice(&buf[..n]);
    }
    (s, got)
}
