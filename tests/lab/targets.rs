//! Targets other than the built-in models, and how the lab starts them: a
//! server from a command (failing, port taken, foreign), nginx and a URL,
//! CPU pinning and the open-file limit.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use loadlab::results::raw;

use super::support::{finish, ok_rows, serial, summary_json, sweep, sweep_env, www_with};

#[test]
fn a_cmd_target_that_exits_fails_at_once_with_its_stderr() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let t = Instant::now();
    let (_, stderr, code) = sweep_env(
        &[
            "-T",
            "cmd:python3 -c 'import sys; sys.exit(\"cannot bind port {port}: no luck\")'",
            "-T",
            "model:event-loop",
            "--concurrency",
            "1,2",
            "--requests",
            "50",
            "--repeat",
            "1",
        ],
        &out,
        &[],
        false,
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "a command that exits is not waited on for 15 s: {:?}",
        t.elapsed()
    );
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 3);
    let failed = &rows[0];
    assert!(failed.target.starts_with("cmd:python3"));
    assert!(
        failed.error.contains("exited (exit status: 1)")
            && failed.error.contains("cannot bind port")
            && failed.error.contains("no luck"),
        "the error quotes the command's stderr: {}",
        failed.error
    );
    ok_rows(&rows[1..]);
    // Its two runs came off the progress total.
    assert!(stderr.contains("4 runs to make"), "{stderr}");
    assert!(stderr.contains("(2 runs dropped)"), "{stderr}");
    assert!(
        stderr.contains("loadlab: run 2/2 model:event-loop"),
        "{stderr}"
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("no luck"), "the failure is in the report");
}

#[test]
fn missing_nginx_is_one_line_at_the_start_and_a_note_in_the_report() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let (stdout, stderr, code) = sweep_env(
        &[
            "-T",
            "nginx",
            "-T",
            "model:event-loop",
            "--concurrency",
            "1,2",
            "--requests",
            "50",
            "--repeat",
            "1",
        ],
        &out,
        &[("LOADLAB_NGINX", "/nonexistent/nginx")],
        false,
    );
    assert_eq!(code, 0, "{stderr}");
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.contains("nginx is not installed") && first.contains("apt-get install nginx"),
        "the first line says how to install nginx: {stderr}"
    );
    assert_eq!(
        stderr.matches("apt-get install nginx").count(),
        1,
        "{stderr}"
    );
    // nginx's runs are not in the total.
    assert!(stderr.contains("2 runs to make"), "{stderr}");
    assert!(stderr.contains("loadlab: run 2/2 "), "{stderr}");
    assert!(stdout.contains("model:event-loop"), "{stdout}");
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.iter().filter(|r| r.is_skip()).count(), 1);
    ok_rows(
        &rows
            .iter()
            .filter(|r| !r.is_skip())
            .cloned()
            .collect::<Vec<_>>(),
    );
    let json = summary_json(&out);
    assert_eq!(json["skipped_targets"][0]["target"], "nginx");
    assert_eq!(json["failed_runs"].as_array().map(Vec::len), Some(0));
    for f in ["index.html", "summary.md"] {
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(
            text.contains("Skipped targets") && text.contains("apt-get install nginx"),
            "{f} mentions the skip"
        );
    }
}

/// A process's allowed CPUs and its (soft, hard) open-file limit; None
/// if it is not (or no longer) there to read.
fn pinning_and_nofile(pid: i32) -> Option<(String, (u64, u64))> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim()
        .to_string();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let nofile: Vec<u64> = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))?
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    Some((allowed, (*nofile.first()?, *nofile.get(1)?)))
}

/// The sweep's target process whose command line contains `want`, with
/// what `pinning_and_nofile` reads of it. Its own command line shows the
/// exec is done, and with it the lab's pre-exec setup. (Waiting for its
/// listening socket instead meant reading /proc/PID/net/tcp, which after
/// the other test binaries holds tens of thousands of TIME_WAIT entries:
/// half a second per read, so a 4-second target could pass unseen.)
fn serving_target(job: &mut Child, want: &str, out: &Path) -> (i32, String, (u64, u64)) {
    let mut found = None;
    let mut seen = Vec::new();
    let mut ended = None;
    let ok = wait_until(Duration::from_secs(30), || {
        ended = job.try_wait().ok().flatten();
        seen = descendants(job.id() as i32)
            .into_iter()
            .map(|p| {
                let c = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
                (p, String::from_utf8_lossy(&c).replace('\0', " "))
            })
            .collect();
        // Not the sweep, nor a child it forked that has not exec'd yet:
        // both show the sweep's command line, which names its targets
        // (`-T 'cmd:python3 -m http.server ...'`), and neither has the
        // target's CPU mask (the child gets it just before its exec).
        found = seen
            .iter()
            .filter(|(_, cmdline)| cmdline.contains(want) && !cmdline.contains(" sweep "))
            .find_map(|&(p, _)| pinning_and_nofile(p).map(|(c, l)| (p, c, l)));
        found.is_some() || ended.is_some()
    });
    if found.is_none() {
        let mut err = String::new();
        if ended.is_some() {
            let _ = job.stderr.take().map(|mut e| e.read_to_string(&mut err));
        }
        panic!(
            "no target running `{want}` was seen (waited: {ok}, sweep ended: {ended:?}); \
             its processes: {seen:?}; stderr: {err}; raw.csv: {}",
            std::fs::read_to_string(out.join("raw.csv")).unwrap_or_default()
        );
    }
    found.unwrap()
}

#[test]
fn cpus_pins_to_the_first_allowed_cpu_and_targets_get_the_open_file_limit() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let www = www_with(dir.path(), "500B.html", &[b'x'; 500]);
    // The sweep starts with the common soft limit of 1,024; its targets
    // must still get the hard limit (10,000 clients need the
    // descriptors). python does not raise its own limit, so the second
    // target shows what loadlab did for it.
    let script = format!(
        "ulimit -Sn 1024; exec {} sweep -T model:event-loop \
         -T 'cmd:python3 -m http.server {{port}} --bind 127.0.0.1 --directory {}' \
         --cpus 1 --duration 4s --repeat 1 --concurrency 2 -q --out {}",
        loadlab_bin(),
        www.display(),
        out.display()
    );
    let mut job = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let first_cpu = loadlab::proc::affinity::allowed_cpus()[0].to_string();
    let (_model, cpus, (soft, hard)) = serving_target(&mut job, "serve --model event-loop", &out);
    assert_eq!(cpus, first_cpu, "model pinned to the first allowed CPU");
    assert_eq!(soft, hard, "model's soft open-file limit raised to hard");
    let (_python, cpus, (soft, hard)) = serving_target(&mut job, "http.server", &out);
    assert_eq!(
        cpus, first_cpu,
        "cmd target pinned to the first allowed CPU"
    );
    if hard <= 1024 {
        println!("note: the hard open-file limit is {hard}; there was nothing to raise");
    }
    assert_eq!(
        soft, hard,
        "cmd target's soft open-file limit raised to hard"
    );
    let (code, _, stderr) = finish(job, Duration::from_secs(20));
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 2);
    ok_rows(&rows);
    assert!(rows.iter().all(|r| r.cpus == 1));
}

#[test]
fn a_cmd_target_whose_port_was_taken_gets_another() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let www = www_with(dir.path(), "hello.txt", b"hello\n");
    // The first start finds its port taken (by a process that binds it
    // without listening, as a racing process would) and fails; any later
    // start serves.
    let script = dir.path().join("start.sh");
    std::fs::write(
        &script,
        format!(
            r#"if mkdir "{d}/first" 2>/dev/null; then
  python3 -c 'import socket, sys, time; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); open(sys.argv[2], "w").close(); time.sleep(30)' "$1" "{d}/held" &
  while [ ! -e "{d}/held" ]; do sleep 0.05; done
  exit 1
fi
exec python3 -m http.server "$1" --bind 127.0.0.1 --directory "{w}"
"#,
            d = dir.path().display(),
            w = www.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("res");
    let target = format!("cmd:sh {} {{port}}", script.display());
    let (_, stderr, code) = sweep(
        &[
            "-T",
            &target,
            "--concurrency",
            "1",
            "--requests",
            "5",
            "--repeat",
            "1",
            "--path",
            "/hello.txt",
        ],
        &out,
    );
    assert!(dir.path().join("first").exists(), "the first start ran");
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 1);
    ok_rows(&rows);
}

#[test]
fn cmd_target_starts_measures_and_stops_a_foreign_server() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let docroot = www_with(dir.path(), "hello.txt", b"hello from python\n");
    let out = dir.path().join("res");
    let target = format!(
        "cmd:python3 -m http.server {{port}} --bind 127.0.0.1 --directory {}",
        docroot.display()
    );
    let (_, stderr, code) = sweep(
        &[
            "-T",
            &target,
            "--concurrency",
            "2",
            "--requests",
            "50",
            "--repeat",
            "1",
            "--path",
            "/hello.txt",
        ],
        &out,
    );
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 1);
    ok_rows(&rows);
    assert_eq!(rows[0].html_bytes, 50 * 18);
    assert!(
        rows[0].server_rss_peak_kb > 1000,
        "python's RSS was sampled"
    );
    // Stopped afterwards: nothing of it is left listening.
    let ps = tool("pgrep")
        .args(["-f", &docroot.display().to_string()])
        .output()
        .unwrap();
    assert!(
        ps.stdout.is_empty(),
        "the cmd target is still running: {}",
        String::from_utf8_lossy(&ps.stdout)
    );
}

#[test]
fn nginx_and_url_targets() {
    let _serial = serial();
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    // A url: target's path is the one every target of the sweep requests.
    let url = format!("url:{}", server.url("/500B.html"));
    let name = format!("url:{}", server.url(""));
    // The skip when nginx is missing is tested with LOADLAB_NGINX pointing
    // nowhere; here nginx must be there.
    require_nginx();
    let args = vec![
        "-T",
        &url,
        "--concurrency",
        "3",
        "--requests",
        "90",
        "--repeat",
        "1",
        "--cpus",
        "1",
        "-T",
        "nginx:workers=1",
    ];
    let (_, stderr, code) = sweep(&args, &out);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("--cpus does not apply to {name}")),
        "{stderr}"
    );
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 2);
    ok_rows(&rows);
    let url_row = rows.iter().find(|r| r.target.starts_with("url:")).unwrap();
    assert_eq!(
        url_row.server_rss_peak_kb, 0,
        "no resource figures for a URL target"
    );
    assert_eq!(url_row.cpus, 0, "a URL target is not restricted");
    {
        let row = rows.iter().find(|r| r.target == "nginx:workers=1").unwrap();
        assert!(
            row.server_rss_peak_kb > 0,
            "nginx's process tree was sampled"
        );
        assert_eq!(row.cpus, 1);
        assert_eq!(
            row.html_bytes,
            90 * 500,
            "nginx serves the same 500-byte file"
        );
    }
}
