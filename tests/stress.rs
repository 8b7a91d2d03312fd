//! `loadlab stress` end to end: a small matrix where clients outnumber
//! server workers finishes with 0 failures, writes its three files, and
//! leaves no temporary files or scratch space behind.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

/// Runs `loadlab stress ARGS` with TMPDIR pointing at `tmp`, so that
/// anything left in the scratch space shows up there.
fn stress(tmp: &Path, args: &[&str]) -> Output {
    Command::new(loadlab_bin())
        .arg("stress")
        .args(args)
        .env("TMPDIR", tmp)
        .output()
        .expect("run loadlab stress")
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

fn csv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn ten_clients_one_worker_zero_failures_and_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = stress(
        tmp.path(),
        &[
            "--ops",
            "upload,download",
            "--sizes",
            "64K,1M",
            "--clients",
            "10",
            "--server-workers",
            "1",
            "--models",
            "thread-pool,prefork",
            "--timeout",
            "60s",
            "--out",
            out_dir.path().to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("80 transfers, 0 failed"), "{stdout}");

    let rows = csv_rows(&out_dir.path().join("stress.csv"));
    assert_eq!(rows.len(), 2 * 2 * 2, "ops x sizes x models");
    for r in &rows {
        assert_eq!(r["clients"], "10");
        assert_eq!(r["server_workers"], "1");
        assert_eq!(r["succeeded"], "10", "{r:?}");
        assert_eq!(r["verified"], "10", "{r:?}");
        assert_eq!(r["failed"], "0", "{r:?}");
        assert!(r["total_s"].parse::<f64>().unwrap() > 0.0);
        assert!(r["per_client_bps"].parse::<f64>().unwrap() > 0.0);
        assert!(r["aggregate_bps"].parse::<f64>().unwrap() > 0.0);
    }
    for op in ["upload", "download"] {
        for size in ["65536", "1048576"] {
            for model in ["thread-pool", "prefork"] {
                assert!(
                    rows.iter()
                        .any(|r| r["op"] == op && r["size"] == size && r["model"] == model),
                    "no row for {op} {size} {model}"
                );
            }
        }
    }

    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.path().join("stress.json")).unwrap())
            .unwrap();
    assert_eq!(json["schema"], "loadlab.stress/1");
    assert_eq!(json["rows"].as_array().unwrap().len(), 8);
    assert_eq!(json["leftover_temp_files"], 0);
    assert_eq!(json["leftover_files"], 0);
    assert_eq!(json["scratch_removed"], true);

    let md = std::fs::read_to_string(out_dir.path().join("stress.md")).unwrap();
    let table_rows = md.lines().filter(|l| l.starts_with("| ")).count();
    assert_eq!(table_rows, 2 + 8, "header, rule and 8 rows: {md}");

    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
}

#[test]
fn url_mode_against_a_running_server_leaves_its_dir_empty() {
    let files = tempfile::tempdir().unwrap();
    let server = TestServer::start(
        "thread-pool",
        &["--workers", "1", "--files", files.path().to_str().unwrap()],
    );
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = stress(
        tmp.path(),
        &[
            "--url",
            &server.url("/files/"),
            "--sizes",
            "100K",
            "--clients",
            "5",
            "--timeout",
            "60s",
            "--out",
            out_dir.path().to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = csv_rows(&out_dir.path().join("stress.csv"));
    assert_eq!(rows.len(), 2);
    assert!(rows
        .iter()
        .all(|r| r["model"] == "external" && r["failed"] == "0"));
    assert!(
        leftovers(files.path()).is_empty(),
        "{:?}",
        leftovers(files.path())
    );
    assert!(leftovers(tmp.path()).is_empty());
}

#[test]
fn bad_arguments_are_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        &["--sizes", "10Q"][..],
        &["--sizes", "0"],
        &["--clients", "0"],
        &["--clients", "1,,2"],
        &["--ops", "upload,fly"],
        &["--models", "fast"],
        &["--models", "prefork", "--server-workers", "0"],
        &["--timeout", "soon"],
        &["--url", "ftp://x"],
        &["--url", "http://127.0.0.1:1", "--models", "prefork"],
    ] {
        let out = stress(tmp.path(), args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
