//! `loadlab stress` end to end, through the CLI: a small matrix where
//! clients outnumber server workers finishes with 0 failures, writes its
//! three files, and leaves no temporary files or scratch space behind;
//! the quick E2 preset; clients that time out; a server that does not
//! start; `--scratch`; `--url`.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::*;

/// The stdout table's columns, as documented in `loadlab stress --help`.
const COLUMNS: [&str; 11] = [
    "op",
    "size",
    "clients",
    "workers",
    "model",
    "time (s)",
    "per client (MB/s)",
    "aggregate (MB/s)",
    "succeeded",
    "failed",
    "verified",
];

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

fn json_file(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn num(r: &std::collections::HashMap<String, String>, k: &str) -> usize {
    r[k].parse().unwrap_or_else(|_| panic!("{k} in {r:?}"))
}

/// Every transfer is counted once: succeeded + failed = clients, and a
/// transfer succeeds only once verified.
fn assert_counts_agree(rows: &[std::collections::HashMap<String, String>]) {
    for r in rows {
        assert_eq!(
            num(r, "succeeded") + num(r, "failed"),
            num(r, "clients"),
            "{r:?}"
        );
        assert_eq!(num(r, "verified"), num(r, "succeeded"), "{r:?}");
        if num(r, "succeeded") == 0 {
            assert_eq!(r["aggregate_bps"].parse::<f64>().unwrap(), 0.0, "{r:?}");
            assert_eq!(r["per_client_bps"].parse::<f64>().unwrap(), 0.0, "{r:?}");
        }
    }
}

/// The stdout table's header line has exactly the documented columns
/// (a padded Markdown grid: cells between `|`).
fn assert_table_columns(stdout: &str) {
    let header = stdout
        .lines()
        .find(|l| l.starts_with("| op "))
        .unwrap_or_else(|| panic!("no table header in:\n{stdout}"));
    let cols: Vec<&str> = header
        .split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(cols, COLUMNS, "{header}");
}

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

/// A one-worker server whose worker is held by an upload that never ends:
/// stress clients queue behind it and must give up at --timeout.
fn timeout_against_a_busy_worker(model: &str) {
    let files = tempfile::tempdir().unwrap();
    let server = TestServer::start(
        model,
        &["--workers", "1", "--files", files.path().to_str().unwrap()],
    );
    let mut hog = server.connect();
    hog.write_all(b"PUT /files/hog.bin HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n")
        .unwrap();
    hog.write_all(&[0u8; 1000]).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || leftovers(files.path())
            .iter()
            .any(|n| n.starts_with(".upload-"))),
        "the worker never took the slow upload"
    );
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let out = stress(
        tmp.path(),
        &[
            "--url",
            &server.url("/files/"),
            "--ops",
            "upload",
            "--sizes",
            "64K",
            "--clients",
            "2",
            "--timeout",
            "1s",
            "--out",
            out_dir.path().to_str().unwrap(),
        ],
    );
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("2 of 2 transfers failed"), "{stderr}");
    // Transfers, cleanup and listing are each bounded by the 1 s timeout.
    assert!(took < Duration::from_secs(30), "the run took {took:?}");
    assert_table_columns(&stdout);
    let rows = csv_rows(&out_dir.path().join("stress.csv"));
    assert_eq!(rows.len(), 1);
    assert_counts_agree(&rows);
    assert_eq!(
        (num(&rows[0], "succeeded"), num(&rows[0], "failed")),
        (0, 2)
    );
    assert!(rows[0]["error"].contains("timed out"), "{:?}", rows[0]);
    assert!(out_dir.path().join("stress.json").is_file());
    assert!(out_dir.path().join("stress.md").is_file());
    drop(hog);
}

#[test]
fn a_client_that_cannot_be_served_in_time_fails_thread_pool() {
    timeout_against_a_busy_worker("thread-pool");
}

#[test]
fn a_client_that_cannot_be_served_in_time_fails_prefork() {
    timeout_against_a_busy_worker("prefork");
}

#[test]
fn a_server_that_does_not_start_fails_its_cells_and_the_run_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    // With 40 descriptors, 100 reactors cannot open their 100 listeners and
    // that server exits at once; the 1-reactor server after it is fine.
    let cmd = format!(
        "ulimit -n 40 && exec '{}' stress --models reactors --server-workers 100,1 \
         --clients 1,2 --sizes 64K --timeout 30s --out '{}'",
        loadlab_bin(),
        out_dir.path().display()
    );
    let out = Command::new("sh")
        .args(["-c", &cmd])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Some transfers were verified, so the run measured something: exit 3
    // (stress's built-in condition held), not 1 (nothing usable).
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("stress: 6 of 12 transfers failed"),
        "{stderr}"
    );
    assert_table_columns(&stdout);
    let rows = csv_rows(&out_dir.path().join("stress.csv"));
    // Every cell of both servers has a row: 2 ops x 2 client pools x 2.
    assert_eq!(rows.len(), 8, "{rows:?}");
    assert_counts_agree(&rows);
    for r in &rows {
        match r["server_workers"].as_str() {
            "100" => {
                assert_eq!(num(r, "failed"), num(r, "clients"), "{r:?}");
                assert!(r["error"].contains("did not start"), "{r:?}");
            }
            "1" => assert_eq!(r["failed"], "0", "{r:?}"),
            w => panic!("unexpected workers {w}"),
        }
    }
    let json = json_file(&out_dir.path().join("stress.json"));
    assert_eq!(json["rows"].as_array().unwrap().len(), 8);
    assert!(
        json["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("did not start")),
        "{json}"
    );
    let md = std::fs::read_to_string(out_dir.path().join("stress.md")).unwrap();
    assert_eq!(md.lines().filter(|l| l.starts_with("| ")).count(), 2 + 8);
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
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

/// Starts `loadlab stress` in the background: uploads and downloads by
/// 1 and 2 clients against servers of `model`, with `args` for the rest.
fn spawn_stress(tmp: &Path, out_dir: &Path, args: &[&str], model: &str) -> std::process::Child {
    Command::new(loadlab_bin())
        .args(["stress", "--ops", "upload,download", "--clients", "1,2"])
        .args(args)
        .args(["--models", model, "--timeout", "30s", "--out"])
        .arg(out_dir)
        .env("TMPDIR", tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_stress_takes_its_server_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let mut job = spawn_stress(
        tmp.path(),
        out_dir.path(),
        &["--sizes", "4M", "--server-workers", "1,2,3,4"],
        "thread-pool",
    );
    let pid = job.id() as i32;
    let mut servers = Vec::new();
    let found = wait_until(Duration::from_secs(30), || {
        servers = descendants(pid);
        !servers.is_empty()
    });
    // Frozen, stress cannot stop its server the normal way in between.
    let stress = nix::unistd::Pid::from_raw(pid);
    nix::sys::signal::kill(stress, nix::sys::signal::Signal::SIGSTOP).unwrap();
    servers = descendants(pid);
    let running: Vec<i32> = servers.iter().copied().filter(|&p| alive(p)).collect();
    job.kill().unwrap();
    job.wait().unwrap();
    assert!(found && !running.is_empty(), "no server was running");
    assert!(
        wait_until(Duration::from_secs(10), || !running
            .iter()
            .any(|&p| alive(p))),
        "servers {running:?} outlived the killed stress"
    );
}

#[test]
fn a_server_whose_master_died_leaves_no_workers_behind() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let mut job = spawn_stress(
        tmp.path(),
        out_dir.path(),
        &["--sizes", "8M", "--server-workers", "2,3,4,5"],
        "prefork",
    );
    let pid = job.id() as i32;
    // A prefork server with its workers forked: stress's child, whose
    // own children are the workers.
    let master_with_workers = || {
        child_pids(pid)
            .into_iter()
            .map(|m| (m, child_pids(m)))
            .find(|(_, w)| w.len() >= 2)
    };
    let mut server = None;
    let found = wait_until(Duration::from_secs(30), || {
        server = master_with_workers();
        server.is_some()
    });
    // Frozen, stress cannot stop that server before its master is killed.
    kill(Pid::from_raw(pid), Signal::SIGSTOP).unwrap();
    let server = master_with_workers().or(server);
    let (master, workers) = server.clone().unwrap_or_default();
    if found {
        kill(Pid::from_raw(master), Signal::SIGKILL).unwrap();
    }
    kill(Pid::from_raw(pid), Signal::SIGCONT).unwrap();
    // The orphaned workers go on serving, so stress finishes its cells,
    // then stops what is left of that server's process group.
    let finished = wait_until(Duration::from_secs(60), || {
        job.try_wait().unwrap().is_some()
    });
    let gone = wait_until(Duration::from_secs(10), || {
        !workers.iter().any(|&w| alive(w))
    });
    let left: Vec<i32> = workers.iter().copied().filter(|&w| alive(w)).collect();
    for &w in &left {
        let _ = kill(Pid::from_raw(w), Signal::SIGKILL);
    }
    if !finished {
        let _ = job.kill();
    }
    let _ = job.wait();
    assert!(found, "no prefork server with workers was seen");
    assert!(
        finished,
        "stress did not finish after its server's master died"
    );
    assert!(
        gone,
        "workers {left:?} of the killed master {master} outlived stress"
    );
}
