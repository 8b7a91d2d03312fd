//! Runs that go as planned: a small matrix with zero failures and a clean
//! directory, URL mode, the quick E2 preset, --scratch, and bad arguments.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

use super::support::{
    assert_counts_agree, assert_table_columns, csv_rows, json_file, leftovers, num, stress,
};

#[test]
fn ten_clients_one_worker_zero_failures_and_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = stress(
        tmp.path(),
        // model subset: stress's default pair, a thread pool and a process pool.
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

    assert_table_columns(&stdout);
    let rows = csv_rows(&out_dir.path().join("stress.csv"));
    assert_eq!(rows.len(), 2 * 2 * 2, "ops x sizes x models");
    assert_counts_agree(&rows);
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
            // model subset: the models run above.
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
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The API hides temporary files, so a remote server's cannot be
    // counted: the run says so instead of claiming 0.
    assert!(
        stdout.contains("temporary files left: not checked (remote server)"),
        "{stdout}"
    );
    let json = json_file(&out_dir.path().join("stress.json"));
    assert!(json["leftover_temp_files"].is_null(), "{json}");
    // Nothing is started here, so no scratch space is made.
    assert!(json["scratch"].is_null(), "{json}");
    assert_eq!(json["scratch_removed"], true);
    assert_eq!(json["leftover_files"], 0);
    let md = std::fs::read_to_string(out_dir.path().join("stress.md")).unwrap();
    assert!(md.contains("temporary files left: not checked (remote server)"));
    let rows = csv_rows(&out_dir.path().join("stress.csv"));
    assert_eq!(rows.len(), 2);
    assert_counts_agree(&rows);
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
        &["--scratch", "/dev/null"],
        // Negative values are invalid values, not unknown flags.
        &["--timeout", "-5s"],
        &["--clients", "-1"],
    ] {
        let out = stress(tmp.path(), args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // The same for serve and sweep.
    for args in [
        &["serve", "--workers", "-1"][..],
        &["serve", "--header-timeout", "-1s"],
        &["sweep", "--concurrency", "-3", "-T", "model:event-loop"],
        &["sweep", "--duration", "-1", "-T", "model:event-loop"],
    ] {
        let out = Command::new(loadlab_bin()).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("invalid value '-"), "{args:?}: {err}");
    }
}

#[test]
fn quick_e2_preset_runs_clean_through_the_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let out = stress(
        tmp.path(),
        &[
            "--preset",
            "e2",
            "--quick",
            "--out",
            out_dir.path().to_str().unwrap(),
        ],
    );
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_table_columns(&stdout);
    assert!(stdout.contains(", 0 failed;"), "{stdout}");
    let rows = csv_rows(&out_dir.path().join("stress.csv"));
    // --quick keeps E2's shape: 2 ops x 2 sizes x 2 client pools x 2
    // server pools x 2 models.
    assert_eq!(rows.len(), 32);
    assert_counts_agree(&rows);
    assert!(rows.iter().all(|r| r["failed"] == "0"), "{rows:?}");
    assert!(
        rows.iter()
            .any(|r| num(r, "clients") > num(r, "server_workers")),
        "no cell where clients outnumber server workers"
    );
    let json = json_file(&out_dir.path().join("stress.json"));
    assert_eq!(json["rows"].as_array().unwrap().len(), 32);
    assert_eq!(json["leftover_temp_files"], 0);
    assert_eq!(json["scratch_removed"], true);
    let md = std::fs::read_to_string(out_dir.path().join("stress.md")).unwrap();
    assert_eq!(md.lines().filter(|l| l.starts_with("| ")).count(), 2 + 32);
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
    // A first look should stay quick; generous, since the machine is shared.
    assert!(took < Duration::from_secs(120), "took {took:?}");
}

#[test]
fn scratch_flag_holds_the_run_and_is_left_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    let scratch = base.path().join("not-yet/there");
    let out_dir = tempfile::tempdir().unwrap();
    let out = stress(
        tmp.path(),
        &[
            "--sizes",
            "64K",
            "--clients",
            "2",
            "--server-workers",
            "1",
            "--models",
            "thread-pool",
            "--scratch",
            scratch.to_str().unwrap(),
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
    let json = json_file(&out_dir.path().join("stress.json"));
    let used = json["scratch"].as_str().unwrap();
    let canon = std::fs::canonicalize(base.path())
        .unwrap()
        .join("not-yet/there");
    assert!(
        Path::new(used).starts_with(&scratch) || Path::new(used).starts_with(&canon),
        "{used} is not under {}",
        scratch.display()
    );
    assert_eq!(json["scratch_removed"], true);
    // The directories the run had to create for --scratch are gone; the
    // one that was there before stays (it may be the user's).
    assert!(!base.path().join("not-yet").exists());
    assert!(
        leftovers(base.path()).is_empty(),
        "{:?}",
        leftovers(base.path())
    );
    assert!(
        leftovers(tmp.path()).is_empty(),
        "TMPDIR was used: {:?}",
        leftovers(tmp.path())
    );
}
