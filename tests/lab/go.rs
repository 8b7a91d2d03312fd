//! Go's net/http as a target (`-T go`, and in the E5 preset): built once
//! into the cache, measured with no failures and explained as Go net/http
//! in the report; a machine without go gets one line naming golang-go.

use std::path::Path;

use loadlab::results::raw;

use super::support::{ok_rows, serial, summary_json, sweep_env};

/// A `go` binary loadlab cannot find: the path a machine without go takes.
const NO_GO: (&str, &str) = ("LOADLAB_GO", "/nonexistent/go");

/// The built servers in an XDG cache directory.
fn built(xdg: &Path) -> Vec<String> {
    match std::fs::read_dir(xdg.join("loadlab").join("go")) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("server-"))
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn a_short_sweep_against_go_net_http_has_every_row_and_no_failure() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (out, xdg) = (dir.path().join("res"), dir.path().join("cache"));
    let xdg_text = xdg.to_string_lossy().into_owned();
    // A cache of its own and no HOME: the build must not need either to
    // exist beforehand (a root-less, HOME-less CI).
    let env = [("XDG_CACHE_HOME", xdg_text.as_str()), ("HOME", "")];
    let args = [
        "-T",
        "go",
        "--concurrency",
        "1,8",
        "--requests",
        "300",
        "--keepalive",
        "on,off",
        "--repeat",
        "1",
    ];
    let (stdout, stderr, code) = sweep_env(&args, &out, &env, true);
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    assert_eq!(rows.len(), 2 * 2, "c = 1, 8 x keep-alive on, off: {rows:?}");
    ok_rows(&rows);
    assert!(rows.iter().all(|r| r.target == "go" && r.non_2xx == 0));
    assert!(stdout.contains("| go "), "{stdout}");
    let bins = built(&xdg);
    assert_eq!(bins.len(), 1, "built once into the cache: {bins:?}");
    for f in ["index.html", "summary.md"] {
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(text.contains("Go net/http"), "{f} says what go is");
    }
    // A second sweep starts the cached binary: no new build.
    let again = dir.path().join("again");
    let (_, stderr, code) = sweep_env(&args[..6], &again, &env, true);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(built(&xdg), bins);
}

#[test]
fn naming_go_without_go_installed_fails_with_one_line_naming_golang_go() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let (_, stderr, code) = sweep_env(&["-T", "go"], &out, &[NO_GO], true);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("go is not installed") && stderr.contains("apt-get install golang-go"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing written for a sweep that cannot run");
}

#[test]
fn a_go_that_cannot_build_is_one_line_in_the_row_and_the_rest_runs() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let xdg = dir.path().join("cache").to_string_lossy().into_owned();
    let env = [("LOADLAB_GO", "/bin/false"), ("XDG_CACHE_HOME", &xdg)];
    let args = ["-T", "go", "-T", "model:event-loop", "--concurrency", "1"];
    let more = ["--requests", "50", "--keepalive", "on", "--repeat", "1"];
    let (_, stderr, code) = sweep_env(&[&args[..], &more[..]].concat(), &out, &env, true);
    assert_eq!(code, 0, "{stderr}");
    let rows = raw::read(&out).unwrap();
    let go: Vec<_> = rows.iter().filter(|r| r.target == "go").collect();
    assert_eq!(go.len(), 1, "{rows:?}");
    assert!(
        go[0]
            .error
            .starts_with("target did not start: `/bin/false version` failed"),
        "{}",
        go[0].error
    );
    assert!(!go[0].error.contains('\n'));
    ok_rows(
        &rows
            .iter()
            .filter(|r| r.target != "go")
            .cloned()
            .collect::<Vec<_>>(),
    );
}

#[test]
fn e5_without_go_skips_it_with_one_line_and_a_note_in_the_report() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e5");
    // The preset's targets at one small cell each.
    let args = [
        "--preset",
        "e5",
        "--quick",
        "--concurrency",
        "1",
        "--requests",
        "50",
        "--keepalive",
        "on",
        "--repeat",
        "1",
    ];
    let (_, stderr, code) = sweep_env(&args, &out, &[NO_GO], true);
    assert_eq!(code, 0, "{stderr}");
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("golang-go")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("skipping go (1 run)"), "{stderr}");
    let rows = raw::read(&out).unwrap();
    let skips: Vec<_> = rows.iter().filter(|r| r.is_skip()).collect();
    assert_eq!(skips.len(), 1, "{rows:?}");
    assert_eq!(skips[0].target, "go");
    let measured: Vec<_> = rows.iter().filter(|r| !r.is_skip()).cloned().collect();
    assert_eq!(
        measured.len(),
        crate::common::MODELS.len(),
        "every model ran"
    );
    ok_rows(&measured);
    let json = summary_json(&out);
    assert_eq!(json["skipped_targets"][0]["target"], "go");
    for f in ["index.html", "summary.md"] {
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(
            text.contains("Skipped targets") && text.contains("apt-get install golang-go"),
            "{f} mentions the skip"
        );
    }
}
