//! Every output of a bad run says so: the text report's "Verdict:" line,
//! the JSON `verdict`, the CSV and series-CSV columns, a merge's, and one
//! WARNING on stderr beside the files kept in ab's and hey's layouts.

use crate::common::bench::{bench_files, bench_json, bench_text, merge_files};
use crate::common::*;

/// A file the bench wrote, whole.
fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn text_report_says_a_500_run_is_non_2xx_and_a_short_run_too_short() {
    let server = TestServer::start("event-loop", &[]);
    let (text, stderr, code) =
        bench_text(&["-q", "-n", "40", "-c", "2", &server.url("/status/500")]);
    assert_eq!(code, 1, "{stderr}");
    let verdict = text.lines().find(|l| l.starts_with("  Verdict: ")).unwrap();
    assert!(
        verdict.starts_with("  Verdict: non-2xx, too-short: 40 of 40 answers were not 2xx"),
        "{verdict}"
    );
    // Right under the heading, before any figure of loadlab's own.
    assert!(text.contains("Beyond ab (loadlab):\n  Verdict: "), "{text}");

    let (text, stderr, code) = bench_text(&["-q", "-t", "0.2", "-c", "2", &server.url("/")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        text.contains("  Verdict: too-short: the run lasted 0."),
        "{text}"
    );
    // A clean run of more than a second is ok, and says so: open loop at
    // a rate far below what either side can do, so no load thread is
    // busy enough to be client-bound even on a loaded test machine.
    let (text, stderr, code) = bench_text(&[
        "-q",
        "-t",
        "1.2",
        "-c",
        "2",
        "-k",
        "--rate",
        "200",
        &server.url("/"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(text.contains("  Verdict: ok\n"), "{text}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn json_and_csv_carry_the_verdict_of_a_failed_and_a_short_run() {
    // A port nothing listens on: every request fails.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", free.local_addr().unwrap());
    drop(free);
    let v = bench_json(&["-n", "10", "-c", "2", &url]);
    assert_eq!(v["verdict"]["flags"][0], "failed", "{}", v["verdict"]);
    assert!(
        v["verdict"]["reasons"][0]
            .as_str()
            .unwrap()
            .starts_with("10 of 10 requests failed"),
        "{}",
        v["verdict"]
    );

    let server = TestServer::start("event-loop", &[]);
    let (csv, stderr, code) = bench_text(&[
        "-q",
        "-t",
        "0.2",
        "-c",
        "2",
        "--format",
        "csv",
        &server.url("/"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().ends_with(",verdict"), "{csv}");
    assert!(lines.next().unwrap().ends_with(",too-short"), "{csv}");
}

#[test]
fn series_csv_rows_carry_the_run_verdict() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rps.csv");
    let (_, stderr, code) = bench_text(&[
        "-q",
        "-t",
        "0.3",
        "-c",
        "2",
        "--series-csv",
        file.to_str().unwrap(),
        &server.url("/status/503"),
    ]);
    assert_eq!(code, 1, "{stderr}");
    let text = read(&file);
    let mut lines = text.lines();
    assert!(lines.next().unwrap().ends_with(",run_verdict"), "{text}");
    let rows: Vec<&str> = lines.collect();
    assert!(!rows.is_empty(), "{text}");
    for row in rows {
        assert!(row.ends_with(",non-2xx;too-short"), "{row}");
    }
    // The series CSV says it itself: no WARNING line for it.
    assert!(!stderr.contains("WARNING"), "{stderr}");
}

/// -g, -e and --per-request keep ab's and hey's layouts; a bad run is
/// said once on stderr, naming each file, even under -S (which hides only
/// ab's notes on the spread of its table).
#[test]
fn ab_layout_files_of_a_bad_run_are_named_in_one_warning() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let (g, e, p) = (path("g.tsv"), path("e.csv"), path("p.csv"));
    let files = ["-g", &g, "-e", &e, "--per-request", &p];
    let url = server.url("/status/500");
    let args = [&["-q", "-S", "-n", "30", "-c", "2"][..], &files, &[&url]].concat();
    let (_, stderr, code) = bench_text(&args);
    assert_eq!(code, 1, "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("WARNING")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    let w = warnings[0];
    assert!(
        w.starts_with(&format!(
            "loadlab: WARNING: {e} (-e), {p} (--per-request), {g} (-g) hold figures of a run that is non-2xx, too-short: "
        )),
        "{w}"
    );
    // The files themselves are as ab and hey write them.
    assert!(read(dir.path().join("g.tsv").as_path())
        .starts_with("starttime\tseconds\tctime\tdtime\tttime\twait\n"));
    assert!(read(dir.path().join("e.csv").as_path()).starts_with("Percentage served,Time in ms\n"));
    assert!(read(dir.path().join("p.csv").as_path()).starts_with("response-time,DNS+dialup,"));

    // A clean run of more than a second writes them without a word (open
    // loop well under capacity: not client-bound either).
    let url = server.url("/");
    let clean = ["-q", "-t", "1.2", "-c", "2", "-k", "--rate", "200"];
    let args = [&clean[..], &files, &[&url]].concat();
    let (_, stderr, code) = bench_text(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn html_of_a_short_run_stays_ab_html_and_is_warned_about() {
    let server = TestServer::start("event-loop", &[]);
    let (html, stderr, code) = bench_text(&["-q", "-t", "0.2", "-c", "2", "-w", &server.url("/")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!html.contains("Verdict"), "ab's HTML alone: {html}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(
            "loadlab: WARNING: the -w HTML on stdout holds figures of a run that is too-short: "
        ),
        "{stderr}"
    );
}

/// A merge computes the verdict of the merged run from its counters: two
/// runs of 50 requests are still too short, and say so in text and JSON.
#[test]
fn merge_of_short_runs_says_too_short() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/");
    let files = bench_files(
        dir.path(),
        &url,
        &[("a.json", &["-n", "50"]), ("b.json", &["-n", "50"])],
    );
    let (merged, runs) = merge_files(&files, &["--allow-apart"]);
    for v in runs.iter().chain([&merged]) {
        assert_eq!(
            v["verdict"]["flags"],
            serde_json::json!(["too-short"]),
            "{v}"
        );
    }
    let out = std::process::Command::new(loadlab_bin())
        .args(["merge", "--allow-apart"])
        .args(&files)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  Verdict: too-short: the run lasted "),
        "{text}"
    );
}

/// A load thread that has to share its CPU with a busy loop is busy (on
/// the CPU or waiting for it) the whole run: the client, not the server,
/// set the rate, and every output says so, a merge of it too. Before, a
/// bench run said "ok" where the same run in a sweep was client-bound.
#[test]
fn a_load_thread_without_a_cpu_of_its_own_is_client_bound() {
    let server = TestServer::start("event-loop", &[]);
    let cpu = std::process::Command::new("sh")
        .args([
            "-c",
            "cut -d, -f1 /sys/fs/cgroup/cpuset.cpus.effective 2>/dev/null | cut -d- -f1",
        ])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "0".into());
    // Two busy loops on the load thread's CPU leave it a third of it,
    // so answers are always waiting when it runs (with one, it still
    // slept now and then and came out near 90 %, the threshold). Killed
    // on drop, also when the test fails.
    struct Kill(Vec<std::process::Child>);
    impl Drop for Kill {
        fn drop(&mut self) {
            for c in &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    let _hog = Kill(
        (0..2)
            .map(|_| {
                std::process::Command::new("taskset")
                    .args(["-c", &cpu, "sh", "-c", "while :; do :; done"])
                    .spawn()
                    .expect("taskset (util-linux)")
            })
            .collect(),
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json");
    // At nice 10 the load thread weighs a tenth of each loop, so it is
    // ready and waiting for its CPU nearly all the time even when the
    // server itself shares a busy CPU (CI runs tests side by side: with
    // the client at nice 0 and the other CPU loaded, the server fell
    // behind and the client idled 37 % of the run).
    let out = std::process::Command::new("nice")
        .args(["-n", "10", "taskset", "-c", &cpu])
        .arg(loadlab_bin())
        .args(["bench", "-q", "-k", "-c", "200", "-t", "1.5", "--out"])
        .arg(&file)
        .args(["--format", "json", &server.url("/")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&read(&file)).unwrap();
    let client = &v["client"];
    let busy = client["busiest_thread_busy_s"].as_f64().unwrap();
    let span = client["span_s"].as_f64().unwrap();
    assert!(busy / span >= 0.9, "{client}");
    assert_eq!(
        v["verdict"]["flags"],
        serde_json::json!(["client-bound"]),
        "{}",
        v["verdict"]
    );
    let reason = v["verdict"]["reasons"][0].as_str().unwrap();
    assert!(
        reason.starts_with("the busiest load thread was busy "),
        "{reason}"
    );
    // Merged with another run (closed loop as this one; merge refuses to
    // mix loops), the run whose busiest thread was busier speaks for the
    // merge, and the CPU of both adds up.
    drop(_hog);
    let other = dir.path().join("other.json");
    let (_, stderr, code) = bench_text(&[
        "-q",
        "-k",
        "-c",
        "2",
        "-t",
        "1.2",
        "--format",
        "json",
        "--out",
        other.to_str().unwrap(),
        &server.url("/"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let o: serde_json::Value = serde_json::from_str(&read(&other)).unwrap();
    let (m, _) = merge_files(&[file.clone(), other.clone()], &["--allow-apart"]);
    assert_eq!(
        m["verdict"]["flags"],
        serde_json::json!(["client-bound"]),
        "{m}"
    );
    let f = |x: &serde_json::Value, k: &str| x["client"][k].as_f64().unwrap();
    let pct = |x: &serde_json::Value| f(x, "busiest_thread_busy_s") / f(x, "span_s");
    let busier = if pct(&o) > pct(&v) { &o } else { &v };
    assert_eq!(
        m["client"]["busiest_thread_busy_s"],
        busier["client"]["busiest_thread_busy_s"]
    );
    assert_eq!(m["client"]["span_s"], busier["client"]["span_s"]);
    assert!(
        (f(&m, "cpu_s") - f(&v, "cpu_s") - f(&o, "cpu_s")).abs() < 1e-9,
        "{m}"
    );
}

/// bench's verdict, the lab's rows and the report's findings call a run
/// client-bound at one threshold; the report keeps its own copy (it may
/// not import bench, DESIGN.md's layers), held to bench's here.
#[test]
fn one_client_bound_threshold_everywhere() {
    assert_eq!(
        loadlab::bench::verdict::CLIENT_BOUND_PCT,
        loadlab::report::summary::BUSY_PCT
    );
}
