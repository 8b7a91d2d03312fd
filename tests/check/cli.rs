//! `loadlab check` as a command: its exit statuses (2 bad usage, 1 not a
//! server, 3 a check failed), one line on stderr for each refusal, its
//! JSON held to docs/schema/check-v1.schema.json, `--only`, and nothing
//! left behind on Ctrl-C.

use std::process::{Command, Stdio};
use std::time::Duration;

use super::support::check_json;
use crate::common::tls::TlsNginx;
use crate::common::{descendants, loadlab_bin, send_signal, wait_until, TestServer};

/// `loadlab check ARGS`: exit code and stderr.
fn check(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(loadlab_bin())
        .arg("check")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn one_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    lines[0]
}

#[test]
fn bad_usage_is_one_line_and_exit_2() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["--only", "no-such-check", "model:event-loop"],
            "unknown check 'no-such-check'",
        ),
        (&["url:http://10.1.2.3:8080/"], "only checks loopback"),
        (&["https://127.0.0.1:8443/"], "plain HTTP/1.1"),
        (&["model:no-such-model"], "no-such-model"),
        (
            &["--path", "x", "model:event-loop"],
            "--path must start with '/'",
        ),
        (&["--time-limit", "0s", "model:event-loop"], "--time-limit"),
    ];
    for (args, says) in cases {
        let (code, stdout, stderr) = check(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(one_line(&stderr).contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn what_is_not_a_server_is_exit_1_with_one_line() {
    // A closed port, a program that exits at once, a bare URL form.
    let port = loadlab::proc::ports::free_port().unwrap();
    for target in [
        format!("url:http://127.0.0.1:{port}/"),
        format!("http://127.0.0.1:{port}"),
        "cmd:true {port}".to_string(),
    ] {
        let (code, _, stderr) = check(&[&target]);
        assert_eq!(code, 1, "{target}: {stderr}");
        assert!(
            one_line(&stderr).contains("not a server"),
            "{target}: {stderr}"
        );
    }
}

#[test]
fn tls_spoken_to_in_plain_http_is_not_a_server() {
    let tls = TlsNginx::start();
    let url = tls.url("/").replacen("https://", "http://", 1);
    let (code, _, stderr) = check(&[&url]);
    assert_eq!(code, 1, "{stderr}");
    // nginx answers 400 "The plain HTTP request was sent to HTTPS port".
    let line = one_line(&stderr);
    assert!(
        line.contains("answered 400") && line.contains("HTTPS port"),
        "{stderr}"
    );
}

#[test]
fn json_matches_its_schema_and_only_runs_what_is_asked() {
    let c = check_json(
        "model:thread-pool",
        &[
            "--only",
            "bytes-after-body,pipelining-broken,path-traversal",
        ],
        &[],
    );
    assert_eq!(c.code, 0, "{}", c.stderr);
    let errs = crate::common::schema::validate("check-v1.schema.json", &c.doc);
    assert!(errs.is_empty(), "{errs:#?}");
    let ids: Vec<String> = c.verdicts().into_keys().collect();
    assert_eq!(
        ids,
        ["bytes-after-body", "path-traversal", "pipelining-broken"]
    );
    assert_eq!(c.with("pass").len(), 3);
    // The models serve built-in files, not a directory on disk: no canary
    // to find, so the probe looks for /etc/passwd instead.
    assert!(
        !c.evidence("path-traversal").contains("canary planted"),
        "{}",
        c.evidence("path-traversal")
    );
    // The whole document, every check.
    let all = check_json("model:thread-pool", &[], &[]);
    let errs = crate::common::schema::validate("check-v1.schema.json", &all.doc);
    assert!(errs.is_empty(), "{errs:#?}");
    assert_eq!(all.doc["tally"]["pass"], 25, "{}", all.doc);
}

#[test]
fn the_text_report_has_one_line_per_check_and_the_fix_under_a_failure() {
    let (code, stdout, stderr) = check(&["model:iterative", "--only", "slowloris-blocks,bad-date"]);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(
        one_line(&stderr),
        "loadlab: 1 check failed: slowloris-blocks"
    );
    let verdicts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("  pass ") || l.starts_with("  fail "))
        .collect();
    assert_eq!(verdicts.len(), 2, "{stdout}");
    for part in ["rule:", "clients:", "fix:", "by design", "2 checks in"] {
        assert!(stdout.contains(part), "{part}: {stdout}");
    }
}

#[test]
fn ctrl_c_leaves_no_child_and_no_temp_file() {
    let tmp = tempfile::tempdir().unwrap();
    let child = Command::new(loadlab_bin())
        .args(["check", "model:thread-per-conn"])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // Wait until the server under check is up, then interrupt mid-check.
    assert!(wait_until(Duration::from_secs(20), || !descendants(pid).is_empty()));
    std::thread::sleep(Duration::from_millis(1500));
    let kids = descendants(pid);
    assert!(send_signal(pid, libc::SIGINT));
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    for k in kids {
        assert!(!crate::common::alive(k), "child {k} outlived the check");
    }
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn the_readme_excerpt_is_what_check_prints() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let section = &readme[readme.find("## Check").unwrap()..];
    let start = section.find("```text\n").unwrap() + "```text\n".len();
    let excerpt = &section[start..start + section[start..].find("```").unwrap()];
    let out = Command::new(loadlab_bin())
        .args(["check", "cmd:python3 tests/zoo/extra_bytes.py {port} 4"])
        .current_dir(root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = printed.lines().collect();
    // Every line shown, but the port and the time, is printed as shown.
    for want in excerpt.lines() {
        let fixed = !want.trim().starts_with("...")
            && !want.starts_with("loadlab check ")
            && !want.contains(" checks in ");
        if fixed {
            assert!(
                lines.contains(&want),
                "README shows a line check does not print: {want}\n{printed}"
            );
        }
    }
    let tally = lines.iter().find(|l| l.contains(" checks in ")).unwrap();
    assert!(
        tally.ends_with("20 pass, 1 warn, 3 fail, 1 skip"),
        "{tally}"
    );
    assert!(excerpt.contains("20 pass, 1 warn, 3 fail, 1 skip"));
}

/// A bare URL (no path of its own) is checked at `--path`; a URL with a
/// path keeps its own.
#[test]
fn a_bare_url_is_checked_at_path() {
    let server = TestServer::start("event-loop", &[]);
    let bare = server.url("").trim_end_matches('/').to_string();
    let only = ["--only", "bytes-after-body"];
    let c = check_json(&bare, &[&only[..], &["--path", "/500B.html"]].concat(), &[]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    assert!(
        c.evidence("bytes-after-body").contains("/500B.html"),
        "{}",
        c.doc
    );
    let own = server.url("/index.html");
    let c = check_json(&own, &[&only[..], &["--path", "/500B.html"]].concat(), &[]);
    assert!(
        c.evidence("bytes-after-body").contains("/index.html"),
        "{}",
        c.doc
    );
}
