//! Bad input: a file that is not a loadlab result, a directory without
//! raw.csv, two results with no cell in common, a bad flag. One line on
//! stderr each, exit 2, never a panic.

use super::support::*;
use crate::common::TestServer;

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a result\n").unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"schema":"something/1"}"#).unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let server = TestServer::start("event-loop", &[]);
    let one = bench_json(
        &["-n", "200", "-c", "1"],
        &server.url("/"),
        &dir.path().join("c1.json"),
    );
    let two = bench_json(
        &["-n", "200", "-c", "2"],
        &server.url("/"),
        &dir.path().join("c2.json"),
    );
    let s = |p: &std::path::Path| p.display().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![s(&text), s(&one)], "not a loadlab result"),
        (vec![s(&other), s(&one)], "not a loadlab result"),
        (vec![s(&empty), s(&one)], "no raw results file raw.csv"),
        (
            vec![s(&dir.path().join("missing")), s(&one)],
            "no such file",
        ),
        (vec![s(&one), s(&two)], "no cell in common"),
        (vec![s(&one)], "two results"),
        (
            vec![s(&one), s(&one), "--format".into(), "xml".into()],
            "xml",
        ),
        (
            vec![s(&one), s(&one), "--fail-on".into(), "rps<5".into()],
            "rps<5",
        ),
    ];
    for (args, says) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (out, err, code) = compare(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        let line = one_line(&err);
        assert!(
            line.starts_with("loadlab: ") && line.contains(says),
            "{args:?}: {line}"
        );
    }
}
