//! Rendering as a command: byte-identical twice and anywhere, with no
//! machine.json or rows, bad directories refused, a closed stdout.

use std::process::Command;

use crate::common::derived;
use loadlab::results::raw;

use super::support::{assert_ok, loadlab, report, results_dir};

#[test]
fn rendering_twice_gives_identical_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    results_dir(dir);
    assert_ok(&report(dir));
    let first = derived(dir);
    assert_ok(&report(dir));
    assert_eq!(derived(dir), first, "second render differs");

    // The same raw.csv elsewhere renders to the same bytes: nothing
    // depends on the directory, the clock or the order of a hash map.
    let other = tempfile::tempdir().expect("tempdir");
    for f in ["raw.csv", "machine.json"] {
        std::fs::copy(dir.join(f), other.path().join(f)).expect("copy");
    }
    assert_ok(&report(other.path()));
    assert_eq!(
        derived(other.path()),
        first,
        "render in another directory differs"
    );

    // A stale chart from an earlier layout is cleared, others are kept.
    std::fs::write(dir.join("charts/old-rps.svg"), "<svg/>").expect("write");
    std::fs::write(dir.join("charts/notes.txt"), "mine").expect("write");
    assert_ok(&report(dir));
    assert!(!dir.join("charts/old-rps.svg").exists());
    assert!(dir.join("charts/notes.txt").exists());
}

#[test]
fn report_without_machine_json_or_rows_still_renders() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    // Header only: a sweep interrupted before its first run finished.
    std::fs::write(dir.join("raw.csv"), "").expect("write");
    raw::append(dir, &[]).expect("append nothing");
    assert_ok(&report(dir));
    let html = std::fs::read_to_string(dir.join("index.html")).expect("index.html");
    assert!(html.contains("machine.json was not found"));
    assert!(html.contains("No run failed."));
    let csv = std::fs::read_to_string(dir.join("summary.csv")).expect("summary.csv");
    assert!(csv.starts_with("experiment,target,"), "{csv}");
    assert_eq!(csv.lines().count(), 1);
}

#[test]
fn bad_directories_are_refused_in_one_line_with_status_2() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("nope");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let garbled = tmp.path().join("garbled");
    std::fs::create_dir(&garbled).expect("mkdir");
    std::fs::write(garbled.join("raw.csv"), "run_id,experiment\nx,y\n").expect("write");
    // A header alone that is not loadlab's: no rows to misread, but the
    // report it gave was "0 runs" over a file that holds none of ours.
    let foreign = tmp.path().join("foreign");
    std::fs::create_dir(&foreign).expect("mkdir");
    std::fs::write(foreign.join("raw.csv"), "a,b\n").expect("write");
    let a_file = tmp.path().join("file");
    std::fs::write(&a_file, "x").expect("write");
    for (dir, says) in [
        (&missing, "is not a directory"),
        (&a_file, "is not a directory"),
        (&empty, "has no raw results file raw.csv"),
        (&garbled, "raw.csv"),
        (&foreign, "does not start with loadlab's raw.csv header"),
    ] {
        let out = report(dir);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", dir.display());
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.contains(says), "{err}");
        assert!(!dir.join("index.html").exists());
    }
    let out = loadlab(&["report"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn regression_report_panicked_when_stdout_was_closed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    results_dir(tmp.path());
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["report", tmp.path().to_str().unwrap()])
        .stdout(writer)
        .output()
        .expect("run loadlab");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "a closed pipe is not a failure: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(tmp.path().join("index.html").exists());
}
