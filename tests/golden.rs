//! Golden files: what users see, pinned byte for byte from fixed inputs,
//! so that a refactor of the renderers and table writers cannot change
//! any of it silently.
//!
//! - bench: `loadlab merge FIXTURE --format ab|json|csv` for three recorded
//!   runs (closed loop with keep-alive; POST with failures and non-2xx;
//!   open loop with a time limit), a merge of two files, and the `-e`
//!   percentile CSV (which `merge` cannot write, so it is rendered through
//!   the library from the same fixtures).
//! - report: `loadlab report DIR` on a sweep directory and an E1 directory:
//!   summary.csv, summary.json and summary.md byte for byte, the set of
//!   file names written, and what the command prints. Charts and
//!   index.html are not compared (their layout is about to change).
//! - sweep: the terminal table `loadlab sweep` prints, from a results
//!   directory that already holds every run of the plan (so the sweep
//!   makes no run and prints the table of raw.csv).
//! - stress: stress.md, stress.csv, stress.json and the terminal table,
//!   from fixed rows through the library (no CLI path takes fixed input).
//!
//! Inputs are under tests/golden/fixtures/ (tests/golden/README.md says
//! how they were recorded), expected output under tests/golden/expected/.
//!
//! To accept a deliberate change of output, re-bless and review the diff:
//!
//! ```text
//! LOADLAB_BLESS=1 scripts/test.sh golden::
//! git diff tests/golden/expected
//! ```
//!
//! With `LOADLAB_BLESS=1` every test writes its expected files instead of
//! comparing; a mismatch otherwise names the file and shows the first
//! differing line with its line number.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use loadlab::bench::json::BenchJson;
use loadlab::bench::render::percentile_csv;
use loadlab::catalog::models::Model;
use loadlab::report::stress as output;
use loadlab::results::stress::{Matrix, Op, StressReport as Report, StressRow as Row, SCHEMA};

// ------------------------------------------------------------ support ---

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn fixture(rel: &str) -> PathBuf {
    golden_dir().join("fixtures").join(rel)
}

fn blessing() -> bool {
    std::env::var_os("LOADLAB_BLESS").is_some_and(|v| v == "1")
}

/// Compares `actual` with `tests/golden/expected/<rel>`, or writes it
/// there when blessing.
fn golden(rel: &str, actual: &str) {
    let path = golden_dir().join("expected").join(rel);
    if blessing() {
        std::fs::create_dir_all(path.parent().expect("expected files sit in a directory"))
            .expect("create the expected directory");
        std::fs::write(&path, actual).expect("write the expected file");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read golden file {}: {e}\n\
             (write it with LOADLAB_BLESS=1 scripts/test.sh golden::)",
            path.display()
        )
    });
    if let Some(diff) = first_difference(&expected, actual) {
        panic!(
            "output differs from golden file {}\n{diff}\n\
             If the change is intended: LOADLAB_BLESS=1 scripts/test.sh golden::, \
             then review `git diff tests/golden/expected`.",
            path.display()
        );
    }
}

/// The first line where the two texts part, with two lines of context
/// before it; `None` when they are equal.
fn first_difference(expected: &str, actual: &str) -> Option<String> {
    if expected == actual {
        return None;
    }
    // split_inclusive keeps the line ends, so a missing final newline or
    // a \r shows up as a difference of that line.
    let e: Vec<&str> = expected.split_inclusive('\n').collect();
    let a: Vec<&str> = actual.split_inclusive('\n').collect();
    let at = e
        .iter()
        .zip(&a)
        .position(|(x, y)| x != y)
        .unwrap_or(e.len().min(a.len()));
    // In a long table row, where in the line it starts.
    let column = match (e.get(at), a.get(at)) {
        (Some(x), Some(y)) => x.chars().zip(y.chars()).take_while(|(p, q)| p == q).count() + 1,
        _ => 1,
    };
    let mut o = format!(
        "first difference at line {}, column {column} (expected {} lines, got {}):\n",
        at + 1,
        e.len(),
        a.len()
    );
    let from = at.saturating_sub(2);
    for (i, line) in e[from..at].iter().enumerate() {
        o.push_str(&format!("  {:>5}   {line:?}\n", from + i + 1));
    }
    let show = |l: Option<&&str>| l.map_or("<end of text>".to_string(), |l| format!("{l:?}"));
    o.push_str(&format!("  {:>5} - {}\n", at + 1, show(e.get(at))));
    o.push_str(&format!("  {:>5} + {}\n", at + 1, show(a.get(at))));
    Some(o)
}

fn loadlab(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run loadlab")
}

fn stdout_of(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("utf-8 output")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Copies a fixture directory (flat: raw.csv, machine.json) to `to`, so
/// that rendering into it never touches the checked-in fixture.
fn copy_fixture_dir(name: &str, to: &Path) {
    std::fs::create_dir_all(to).expect("create the results directory");
    for e in std::fs::read_dir(fixture(name)).expect("list the fixture") {
        let e = e.expect("fixture entry");
        std::fs::copy(e.path(), to.join(e.file_name())).expect("copy a fixture file");
    }
}

/// Every file under `dir`, as sorted relative paths one per line.
fn file_names(dir: &Path) -> String {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).expect("list the results directory") {
            let p = e.expect("directory entry").path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).expect("under the root");
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    let mut names = Vec::new();
    walk(dir, dir, &mut names);
    names.sort();
    names.iter().map(|n| format!("{n}\n")).collect()
}

// -------------------------------------------------------------- bench ---

/// The ab report's banner and the JSON's `loadlab_version` carry the
/// version of the binary that renders (not the one that recorded the
/// fixture): a version bump is not a change of layout, so only those two
/// places are replaced by `{VERSION}`.
fn normalise_version(s: &str) -> String {
    let v = env!("CARGO_PKG_VERSION");
    s.replace(
        &format!("This is loadlab bench {v}, "),
        "This is loadlab bench {VERSION}, ",
    )
    .replace(
        &format!("\"loadlab_version\": \"{v}\""),
        "\"loadlab_version\": \"{VERSION}\"",
    )
}

const FORMATS: [(&str, &str); 3] = [("ab", "txt"), ("json", "json"), ("csv", "csv")];

/// `loadlab merge bench/NAME.json --format F` for every format. Merge is
/// a pure function of the JSON: nothing host- or time-dependent but the
/// version is in its output.
fn check_merge(name: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = fixture(&format!("bench/{name}.json"));
    for (format, ext) in FORMATS {
        let out = loadlab(
            &["merge", "--format", format, input.to_str().expect("utf-8")],
            dir.path(),
        );
        let text = stdout_of(&out, &format!("loadlab merge --format {format}"));
        golden(&format!("bench/{name}.{ext}"), &normalise_version(&text));
    }
}

/// ab's `-e` CSV: `merge` has no `-e`, and `bench -e` renders it with
/// this same function from the measured result, so it is pinned from the
/// fixture through the library.
fn check_percentiles(name: &str) {
    let json: BenchJson = serde_json::from_str(&read(&fixture(&format!("bench/{name}.json"))))
        .expect("fixture is a bench JSON result");
    let result = json.into_result().expect("fixture converts to a result");
    golden(&format!("bench/{name}.e.csv"), &percentile_csv(&result));
}

#[test]
fn bench_keepalive_closed_loop() {
    check_merge("keepalive");
    check_percentiles("keepalive");
}

#[test]
fn bench_post_with_failures_and_non_2xx() {
    check_merge("failures");
    check_percentiles("failures");
}

#[test]
fn bench_open_loop_with_a_time_limit() {
    check_merge("open-loop");
    check_percentiles("open-loop");
}

#[test]
fn bench_merge_of_two_runs() {
    // Two files of the same run: counts and concurrency double, latency
    // percentiles stay.
    let dir = tempfile::tempdir().expect("temp dir");
    let second = dir.path().join("second.json");
    std::fs::copy(fixture("bench/keepalive.json"), &second).expect("copy the fixture");
    let first = fixture("bench/keepalive.json");
    let out = loadlab(
        &[
            "merge",
            first.to_str().expect("utf-8"),
            second.to_str().expect("utf-8"),
        ],
        dir.path(),
    );
    let text = stdout_of(&out, "loadlab merge of two files");
    golden("bench/keepalive-twice.txt", &normalise_version(&text));
}

// ------------------------------------------------------------- report ---

/// `loadlab report results` run from a temp dir holding a copy of the
/// fixture; the relative path keeps the printed line free of temp paths.
fn check_report(name: &str) {
    let work = tempfile::tempdir().expect("temp dir");
    let dir = work.path().join("results");
    copy_fixture_dir(name, &dir);
    let out = loadlab(&["report", "results"], work.path());
    golden(
        &format!("{name}/stdout.txt"),
        &stdout_of(&out, "loadlab report"),
    );
    for f in ["summary.csv", "summary.json", "summary.md"] {
        golden(&format!("{name}/{f}"), &read(&dir.join(f)));
    }
    golden(&format!("{name}/files.txt"), &file_names(&dir));
}

/// Four targets (two models, nginx, a URL), c = 1 and 10, keep-alive off
/// and on, three repeats and a warm-up each, a target that did not start,
/// a failed run, a skipped target, and a run with failed and non-2xx
/// requests.
#[test]
fn report_of_a_sweep() {
    check_report("report-sweep");
}

/// E1 gets its ab-style tables; without machine.json the report says
/// the machine is not recorded.
#[test]
fn report_of_e1_without_machine_json() {
    check_report("report-e1");
}

/// The flags that recorded fixtures/report-sweep (see the README there):
/// every run of this plan is in its raw.csv, so the sweep resumes into
/// nothing, starts no target and prints the table of what raw.csv holds.
// model subset: the plan that recorded the fixture.
const SWEEP_PLAN: [&str; 20] = [
    // The fixture was measured before CPUs were split by default.
    "--cpus",
    "all",
    "--target",
    "model:event-loop",
    "--target",
    "model:thread-pool:workers=4",
    "--target",
    "nginx:workers=2",
    "--target",
    // A url: target's path is the one every target requests.
    "url:http://127.0.0.1:43961/500B.html",
    "--concurrency",
    "1,10",
    "--keepalive",
    "off,on",
    "--requests",
    "200",
    "--repeat",
    "3",
    "--warmup-runs",
    "1",
];

#[test]
fn sweep_terminal_table() {
    let work = tempfile::tempdir().expect("temp dir");
    let dir = work.path().join("results");
    copy_fixture_dir("report-sweep", &dir);
    let mut args = vec!["sweep", "-q", "--out", "results"];
    args.extend(SWEEP_PLAN);
    let out = loadlab(&args, work.path());
    let stdout = stdout_of(&out, "loadlab sweep");
    // Had the sweep made a run, the table would hold new numbers: say
    // why rather than show a diff of them.
    assert_eq!(
        read(&dir.join("raw.csv")),
        read(&fixture("report-sweep/raw.csv")),
        "the sweep was to make no run (SWEEP_PLAN no longer matches the fixture's runs?); stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    golden("sweep/stdout.txt", &stdout);
    // The sweep renders the report `loadlab report` would: rendering
    // again changes nothing. (Compared here rather than with the golden
    // files, which report_of_a_sweep alone writes when blessing.)
    let summaries = ["summary.csv", "summary.json", "summary.md"];
    let by_sweep: Vec<String> = summaries.iter().map(|f| read(&dir.join(f))).collect();
    stdout_of(
        &loadlab(&["report", "results"], work.path()),
        "loadlab report",
    );
    for (f, before) in summaries.iter().zip(&by_sweep) {
        if let Some(diff) = first_difference(&read(&dir.join(f)), before) {
            panic!("{f} from the sweep differs from loadlab report's\n{diff}");
        }
    }
}

// ------------------------------------------------------------- stress ---

/// A finished stress run, fixed. `external`: against `--url` (one
/// external server, no temp-file check, no scratch) rather than servers
/// stress started. All construction of stress types is here, so a move
/// of those types touches this function only.
fn stress_report(external: bool) -> Report {
    const MB: u64 = 1 << 20;
    let server = |model: Model, workers: usize| {
        if external {
            (None, "external".to_string())
        } else {
            (Some(workers), model.name().to_string())
        }
    };
    let row = |op, size, clients, (server_workers, model), total_s: f64, failed: usize| {
        let succeeded = clients - failed;
        Row {
            op,
            size,
            clients,
            server_workers,
            model,
            total_s,
            // Made-up but uneven figures, so rounding is exercised.
            per_client_bps: size as f64 / total_s * 0.937,
            aggregate_bps: (size * succeeded as u64) as f64 / total_s,
            succeeded,
            failed,
            verified: succeeded,
            error: if failed > 0 {
                "receive: connection reset by peer, after 3145728 of 10485760 bytes (\"short\")"
                    .into()
            } else {
                String::new()
            },
        }
    };
    let rows = vec![
        row(Op::Upload, MB, 1, server(Model::ThreadPool, 1), 0.0123, 0),
        row(
            Op::Upload,
            10 * MB,
            10,
            server(Model::Prefork, 4),
            1.98765,
            0,
        ),
        row(
            Op::Download,
            1000,
            1,
            server(Model::ThreadPool, 1),
            0.00042,
            0,
        ),
        row(Op::Download, 10 * MB, 10, server(Model::Prefork, 4), 2.5, 3),
        row(
            Op::Download,
            MB << 10,
            1,
            server(Model::Prefork, 4),
            9.87654,
            0,
        ),
    ];
    Report {
        schema: SCHEMA,
        loadlab_version: "0.1.0",
        target: if external {
            "http://127.0.0.1:8080".into()
        } else {
            "spawned".into()
        },
        timeout_s: 60.0,
        matrix: Matrix {
            ops: vec![Op::Upload, Op::Download],
            sizes: vec![1000, MB, 10 * MB, MB << 10],
            clients: vec![1, 10],
            server_workers: vec![1, 4],
            models: vec![Model::ThreadPool, Model::Prefork],
        },
        started_unix_ms: 1_700_000_000_123,
        elapsed_s: 14.37,
        rows,
        leftover_temp_files: (!external).then_some(0),
        leftover_files: 0,
        scratch: (!external).then(|| "/tmp/loadlab-stress-golden".into()),
        scratch_removed: true,
        notes: vec![if external {
            "the server closed 3 connections mid-transfer".into()
        } else {
            "prefork w=4 restarted a worker that died".into()
        }],
        diagnoses: vec![stress_diagnosis(external)],
    }
}

/// The check before the first cell: the external server sends bytes after
/// its bodies, the spawned one passes.
fn stress_diagnosis(external: bool) -> loadlab::results::diagnosis::Diagnosis {
    use loadlab::results::diagnosis::{CheckLine, Diagnosis};
    let line = |id: &str, verdict: &str, evidence: &str| CheckLine {
        id: id.into(),
        verdict: verdict.into(),
        evidence: evidence.into(),
        fix: format!("the fix for {id}"),
    };
    Diagnosis {
        target: if external {
            "http://127.0.0.1:8080".into()
        } else {
            "model:thread-pool:workers=1".into()
        },
        unusable: None,
        seconds: 0.12,
        checks: vec![
            if external {
                line("bytes-after-body", "fail", "4 bytes after a 6-byte body")
            } else {
                line("bytes-after-body", "pass", "none")
            },
            line("bad-date", "pass", "an IMF-fixdate"),
        ],
    }
}

fn check_stress(name: &str, external: bool) {
    let report = stress_report(external);
    let dir = tempfile::tempdir().expect("temp dir");
    let written = output::write_files(dir.path(), &report).expect("write the stress files");
    assert_eq!(written.len(), 3, "stress writes csv, json and md");
    for f in ["stress.md", "stress.csv", "stress.json"] {
        golden(&format!("{name}/{f}"), &read(&dir.path().join(f)));
    }
    golden(
        &format!("{name}/table.txt"),
        &output::terminal_table(&report.rows),
    );
}

#[test]
fn stress_of_spawned_servers() {
    check_stress("stress", false);
}

#[test]
fn stress_against_a_url() {
    check_stress("stress-url", true);
}

#[test]
fn a_mismatch_names_the_first_differing_line() {
    let d = first_difference("a\nb\nc\nd\n", "a\nb\nc\nX\n").expect("they differ");
    assert!(d.contains("first difference at line 4, column 1"), "{d}");
    assert!(d.contains("- \"d\\n\"") && d.contains("+ \"X\\n\""), "{d}");
    let d = first_difference("| 1 | 2 |\n", "| 1 | 3 |\n").expect("they differ");
    assert!(d.contains("line 1, column 7"), "{d}");
    let d = first_difference("a\n", "a\nb\n").expect("they differ");
    assert!(d.contains("line 2") && d.contains("<end of text>"), "{d}");
    let d = first_difference("a\n", "a").expect("they differ");
    assert!(d.contains("line 1"), "{d}");
    assert_eq!(first_difference("same\n", "same\n"), None);
}
