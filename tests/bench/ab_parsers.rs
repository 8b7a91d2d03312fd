//! ab's output where scripts look for it (issue 21): two parsers written
//! here, one positional (skips ab's first seven lines and reads fixed line
//! numbers, as olegbilovus/ab-to-csv does) and one by label, read ab's and
//! loadlab's output alike, on stdout and from an `--out` file; ab's
//! heartbeats go to stderr byte for byte as ab's do.

use crate::common::bench::bench_text;
use crate::common::*;

/// Lines after the seven a positional parser skips (banner, blank,
/// "Benchmarking", two blanks), and the label each must carry: ab's
/// layout for a run without failures, non-2xx answers, -k or a body.
const POSITIONS: [(usize, &str); 12] = [
    (0, "Server Software"),
    (1, "Server Hostname"),
    (2, "Server Port"),
    (4, "Document Path"),
    (5, "Document Length"),
    (7, "Concurrency Level"),
    (8, "Time taken for tests"),
    (9, "Complete requests"),
    (10, "Failed requests"),
    (13, "Requests per second"),
    (14, "Time per request"),
    (15, "Time per request"),
];

/// A positional parser: skips 7 lines, takes the value after the colon
/// at each fixed line, then the nine lines from the first "50%" after line
/// 15. Errs, naming the line, where a line is not what it should be.
fn parse_by_position(report: &str) -> Result<Vec<(String, String)>, String> {
    let lines: Vec<&str> = report.lines().skip(7).collect();
    let mut out = Vec::new();
    for (i, label) in POSITIONS {
        let line = lines.get(i).ok_or(format!("no line {i}"))?;
        let (l, v) = line
            .split_once(':')
            .ok_or(format!("line {i} has no colon: {line:?}"))?;
        if l != label {
            return Err(format!("line {i} is {line:?}, not {label}"));
        }
        let first = v.split_whitespace().next().unwrap_or("").to_string();
        out.push((label.to_string(), first));
    }
    let p50 = (15..lines.len())
        .find(|&j| lines[j].contains("50%"))
        .ok_or("no 50% line")?;
    for (k, pct) in ["50", "66", "75", "80", "90", "95", "98", "99", "100"]
        .iter()
        .enumerate()
    {
        let line = lines.get(p50 + k).ok_or("short percentile table")?;
        let (p, v) = line.split_once('%').ok_or(format!("{line:?}"))?;
        if p.trim() != *pct {
            return Err(format!("percentile line {k} is {line:?}"));
        }
        let ms = v.split_whitespace().next().unwrap_or("").to_string();
        out.push((format!("{pct}%"), ms));
    }
    Ok(out)
}

/// ab's labels a key-based parser looks for.
const KEYS: [&str; 12] = [
    "Server Software:",
    "Document Length:",
    "Concurrency Level:",
    "Time taken for tests:",
    "Complete requests:",
    "Failed requests:",
    "Total transferred:",
    "HTML transferred:",
    "Requests per second:",
    "Transfer rate:",
    "Total:",
    "  50%",
];

/// A parser by label: each key's first value, and how many lines start
/// with it (a second line with the same key would mislead a parser that
/// takes the last one).
fn parse_by_label(report: &str) -> Vec<(&'static str, String, usize)> {
    KEYS.iter()
        .map(|&k| {
            let mut hits = report.lines().filter(|l| l.starts_with(k));
            let value = hits
                .next()
                .map(|l| {
                    l[k.len()..]
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .to_string()
                })
                .unwrap_or_default();
            (k, value, 1 + hits.count())
        })
        .collect()
}

/// Holds a report to both parsers: every value found and a number.
fn both_parsers_read(report: &str, who: &str) -> (Vec<String>, Vec<&'static str>) {
    let by_position = parse_by_position(report)
        .unwrap_or_else(|e| panic!("positional parser on {who}: {e}\n{report}"));
    for (label, v) in &by_position {
        if !label.starts_with("Server") && !label.starts_with("Document Path") {
            assert!(
                v.trim_end_matches("bytes").parse::<f64>().is_ok(),
                "{who}: {label} = {v:?}\n{report}"
            );
        }
    }
    let by_label = parse_by_label(report);
    for (k, v, n) in &by_label {
        assert_eq!(*n, 1, "{who}: {n} lines start with {k:?}\n{report}");
        assert!(!v.is_empty(), "{who}: no value for {k:?}\n{report}");
    }
    (
        by_position.into_iter().map(|(l, _)| l).collect(),
        by_label.into_iter().map(|(k, _, _)| k).collect(),
    )
}

#[test]
fn positional_and_label_parsers_read_loadlab_as_they_read_ab() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.txt");
    let file_arg = file.to_str().unwrap();
    // With heartbeats (ab's line 5 ends at "(be patient)") and without
    // (it ends "(be patient).....done").
    for args in [
        &["-n", "1000", "-c", "4"][..],
        &["-q", "-n", "100", "-c", "2"],
    ] {
        let ab = tool("ab").args(args).arg(&url).output().unwrap();
        assert!(ab.status.success());
        let ab = String::from_utf8_lossy(&ab.stdout).into_owned();
        let (ours, err, code) = bench_text(&[args, &[url.as_str()]].concat());
        assert_eq!(code, 0, "{err}");
        let theirs = both_parsers_read(&ab, "ab");
        assert_eq!(both_parsers_read(&ours, "loadlab"), theirs, "{args:?}");
        // The two-line banner of before put every line one up: caught.
        let two_line_banner: String = ours
            .lines()
            .enumerate()
            .filter(|&(i, _)| i != 2)
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        assert!(parse_by_position(&two_line_banner).is_err());
        let line5 = |t: &str| t.lines().nth(4).unwrap().to_string();
        assert_eq!(line5(&ours), line5(&ab), "{args:?}");

        // The --out file: the same lines, none of the progress text.
        let (stdout, _, code) = bench_text(&[args, &["--out", file_arg, url.as_str()]].concat());
        assert_eq!(code, 0);
        assert!(stdout.is_empty(), "{stdout}");
        let saved = std::fs::read_to_string(&file).unwrap();
        assert_eq!(both_parsers_read(&saved, "--out"), theirs);
        assert_eq!(line5(&saved), "Benchmarking 127.0.0.1");
        for progress in ["be patient", "done", "Completed", "Finished", "\u{1b}"] {
            assert!(!saved.contains(progress), "{progress:?} in\n{saved}");
        }
    }
}

#[test]
fn the_banner_is_three_lines_with_loadlab_where_ab_names_itself() {
    let server = TestServer::start("event-loop", &[]);
    let (ours, _, code) = bench_text(&["-q", "-n", "5", &server.url("/")]);
    assert_eq!(code, 0);
    let ab = tool("ab")
        .args(["-q", "-n", "5", &server.url("/")])
        .output()
        .unwrap();
    let ab = String::from_utf8_lossy(&ab.stdout).into_owned();
    let head = |t: &str| t.lines().take(8).map(str::to_string).collect::<Vec<_>>();
    let (ours, ab) = (head(&ours), head(&ab));
    assert!(ab[0].starts_with("This is ApacheBench"), "{ab:?}");
    assert!(ours[0].starts_with("This is loadlab bench "), "{ours:?}");
    for (i, (o, a)) in ours.iter().zip(&ab).enumerate().skip(1) {
        // Lines 2 and 3 are the banner's own; the rest is ab's layout.
        if i > 2 {
            assert_eq!(o, a, "line {}", i + 1);
        } else {
            assert!(!o.is_empty(), "line {}", i + 1);
        }
    }
}

/// Regression (issue 21): ab's "Completed N requests" went nowhere and
/// loadlab's "(be patient).....done" was the only sign of life. Now the
/// heartbeats are ab's, on stderr, byte for byte, unless -q.
#[test]
fn regression_heartbeats_go_to_stderr_as_abs_do() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    for n in ["1000", "151", "150", "2000"] {
        let args = ["-n", n, "-c", "4", url.as_str()];
        let ab = tool("ab").args(args).output().unwrap();
        assert!(ab.status.success());
        let (_, ours, code) = bench_text(&args);
        assert_eq!(code, 0, "{ours}");
        assert_eq!(ours, String::from_utf8_lossy(&ab.stderr), "-n {n}");
    }
    let (_, err, _) = bench_text(&["-n", "300", "-c", "4", &url]);
    assert_eq!(
        err,
        "Completed 100 requests\nCompleted 200 requests\nCompleted 300 requests\nFinished 300 requests\n"
    );
    let (_, err, _) = bench_text(&["-q", "-n", "300", "-c", "4", &url]);
    assert!(err.is_empty(), "-q: {err}");
    // A run limited by time: a heartbeat every 5,000 (ab's count for -t
    // is 50,000), then the number finished, which the report agrees with.
    let (out, err, code) = bench_text(&["-t", "1", "-c", "2", "-k", &url]);
    assert_eq!(code, 0, "{err}");
    let mut lines: Vec<&str> = err.lines().collect();
    let finished = lines.pop().unwrap().strip_prefix("Finished ").unwrap();
    let complete = out
        .lines()
        .find_map(|l| l.strip_prefix("Complete requests:"))
        .unwrap()
        .trim();
    assert_eq!(finished, format!("{complete} requests"), "{err}");
    for (k, l) in lines.iter().enumerate() {
        assert_eq!(
            *l,
            format!("Completed {} requests", 5000 * (k + 1)),
            "{err}"
        );
    }
}
