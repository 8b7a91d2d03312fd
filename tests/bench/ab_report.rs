//! The report as ab prints it: every label, the -e percentile CSV, document
//! lengths and -l, and no progress bar without a terminal.

use std::collections::BTreeSet;

use crate::common::bench::{bench_json, bench_text, u};
use crate::common::fake::{Behaviour, FakeServer};
use crate::common::*;

#[test]
fn varying_lengths_fail_unless_l_is_given() {
    let fake = FakeServer::start(Behaviour::VaryingLength);
    let r = bench_json(&["-n", "70", "-c", "1", "-k", &fake.url("/")]);
    assert_eq!(u(&r, "/complete"), 70);
    assert_eq!(
        u(&r, "/failures/length"),
        60,
        "every length but the first one's (10 of 70 match)"
    );
    assert_eq!(r["variable_length"], true);
    let r = bench_json(&["-n", "70", "-c", "1", "-k", "-l", &fake.url("/")]);
    assert_eq!(u(&r, "/failed"), 0);
    let (text, _, _) = bench_text(&["-q", "-n", "20", "-c", "1", "-l", &fake.url("/")]);
    assert!(text.contains("Document Length:        Variable"), "{text}");
}

/// Lines of the form `Label:   value`, keyed by label.
fn labels(report: &str) -> BTreeSet<String> {
    report
        .lines()
        .filter_map(|l| {
            let (label, rest) = l.split_once(':')?;
            let ok = !label.is_empty()
                && label.chars().next()?.is_ascii_uppercase()
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == ' ' || c == '-')
                && rest.starts_with(' ');
            // ab's statistical WARNING/ERROR notes are diagnostics that
            // depend on the sample, not report labels.
            let diagnostic = matches!(label, "WARNING" | "ERROR");
            (ok && !diagnostic).then(|| label.trim().to_string())
        })
        .collect()
}

fn percent_rows(report: &str) -> Vec<String> {
    report
        .lines()
        .filter(|l| {
            l.trim_start()
                .split('%')
                .next()
                .is_some_and(|p| !p.is_empty() && p.trim().parse::<u32>().is_ok())
        })
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

#[test]
fn report_has_every_label_ab_prints() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("b.txt");
    std::fs::write(&body, b"hello").unwrap();
    let body = body.to_str().unwrap().to_string();
    let page = server.url("/500B.html");
    let echo = server.url("/echo");
    let status = server.url("/status/404");
    let cases: [Vec<&str>; 3] = [
        vec!["-n", "200", "-c", "10", "-k", &page],
        vec![
            "-n",
            "200",
            "-c",
            "10",
            "-p",
            &body,
            "-T",
            "text/plain",
            &echo,
        ],
        vec!["-n", "100", "-c", "5", &status],
    ];
    for args in cases {
        let ab = tool("ab").args(&args).output().unwrap();
        assert!(ab.status.success());
        let ab = String::from_utf8_lossy(&ab.stdout).into_owned();
        let (ours, err, code) = bench_text(&args);
        // ab exits 0 whatever the answers; loadlab exits 1 when every
        // answer is a 404, after the same report.
        let all_404 = args.last() == Some(&status.as_str());
        assert_eq!(code, if all_404 { 1 } else { 0 }, "{err}");
        let missing: Vec<_> = labels(&ab).difference(&labels(&ours)).cloned().collect();
        assert!(
            missing.is_empty(),
            "labels ab prints but loadlab does not: {missing:?}\n--- ab\n{ab}\n--- loadlab\n{ours}"
        );
        assert_eq!(
            percent_rows(&ab),
            percent_rows(&ours),
            "percentage table rows"
        );
        for row in ["Connect:", "Processing:", "Waiting:", "Total:"] {
            let count = |t: &str| t.lines().filter(|l| l.starts_with(row)).count();
            assert_eq!(count(&ab), count(&ours), "{row}");
        }
    }
}

#[test]
fn e_writes_ab_style_percentile_csv() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("ours.csv");
    let theirs = dir.path().join("ab.csv");
    let url = server.url("/500B.html");
    let (_, _, code) = bench_text(&[
        "-q",
        "-n",
        "200",
        "-c",
        "4",
        "-e",
        ours.to_str().unwrap(),
        &url,
    ]);
    assert_eq!(code, 0);
    assert!(tool("ab")
        .args([
            "-q",
            "-n",
            "200",
            "-c",
            "4",
            "-e",
            theirs.to_str().unwrap(),
            &url
        ])
        .output()
        .unwrap()
        .status
        .success());
    let ours = std::fs::read_to_string(ours).unwrap();
    let theirs = std::fs::read_to_string(theirs).unwrap();
    assert_eq!(ours.lines().next(), theirs.lines().next());
    assert_eq!(ours.lines().count(), theirs.lines().count());
    let firsts = |t: &str| {
        t.lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(firsts(&ours), firsts(&theirs));
    let times: Vec<f64> = ours
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "percentile times never decrease"
    );
}

#[test]
fn no_progress_bar_when_stderr_is_not_a_terminal_only_abs_heartbeats() {
    let server = TestServer::start("event-loop", &[]);
    let (stdout, stderr, code) = bench_text(&["-n", "300", "-c", "3", &server.url("/")]);
    assert_eq!(code, 0);
    assert_eq!(
        stderr,
        "Completed 100 requests\nCompleted 200 requests\nCompleted 300 requests\nFinished 300 requests\n"
    );
    assert!(stdout.contains("Complete requests:      300"));
}

#[test]
fn document_length_baseline_is_run_wide_across_threads() {
    // Each connection gets its own length (10 or 11 bytes), and each of the
    // two threads owns one connection with 50 requests. ab holds every
    // response to the run's first: the other connection's 50 responses
    // fail on length, whichever thread answered first.
    let fake = FakeServer::start(Behaviour::LengthPerConnection);
    let args = ["-n", "100", "-c", "2", "--threads", "2", "-k"];
    let url = fake.url("/");
    let r = bench_json(&[&args[..], &[url.as_str()]].concat());
    assert_eq!(u(&r, "/complete"), 100);
    assert_eq!(u(&r, "/failures/length"), 50, "{r}");
    assert!([10, 11].contains(&u(&r, "/document_length")));
    assert_eq!(r["variable_length"], true);
    let r = bench_json(&[&args[..], &["-l", url.as_str()]].concat());
    assert_eq!(u(&r, "/failed"), 0, "-l accepts any length");
}

#[test]
fn l_always_reports_a_variable_document_length_like_ab() {
    // ab prints "Variable" whenever -l is given, even if every length
    // matched, and the length in bytes otherwise.
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    let doc_line = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("Document Length:"))
            .unwrap_or_else(|| panic!("no Document Length in {t}"))
            .to_string()
    };
    for extra in [&["-l"][..], &[][..]] {
        let args = [&["-q", "-n", "20", "-c", "2"], extra, &[url.as_str()]].concat();
        let ab = tool("ab").args(&args).output().unwrap();
        assert!(ab.status.success());
        let (ours, _, code) = bench_text(&args);
        assert_eq!(code, 0);
        assert_eq!(
            doc_line(&ours),
            doc_line(&String::from_utf8_lossy(&ab.stdout)),
            "{extra:?}"
        );
    }
}
