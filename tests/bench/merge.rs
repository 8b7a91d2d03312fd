//! Merging runs: two runs merge into one over both, open and closed loop
//! do not mix, and a run's summaries are those of its own histograms.

use std::process::Command;

use crate::common::bench::{bench_files, bench_json, bench_text, merge_files, u};
use crate::common::*;
use serde_json::Value;

/// Two runs, 300 and 500 requests, one after the other against one
/// server (kept running while the result is held): their JSON files.
fn two_runs_one_after_the_other() -> (TestServer, tempfile::TempDir, Vec<std::path::PathBuf>) {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/500B.html");
    let runs: [(&str, &[&str]); 2] = [
        ("a.json", &["-n", "300", "-c", "5"]),
        ("b.json", &["-n", "500", "-c", "5"]),
    ];
    let files = bench_files(dir.path(), &url, &runs);
    (server, dir, files)
}

/// `loadlab merge FLAGS... FILES...`, which must refuse (exit 2): its stderr.
fn merge_refused(flags: &[&str], files: &[std::path::PathBuf]) -> String {
    let out = Command::new(loadlab_bin())
        .arg("merge")
        .args(flags)
        .args(files)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    stderr
}

#[test]
fn merge_of_two_runs_equals_one_run_over_both() {
    use loadlab::bench::stats::{decode_histogram, Summary};
    let (_server, _dir, files) = two_runs_one_after_the_other();
    // The runs were made one after the other: merge says how far apart
    // they were, and merges them with --allow-apart.
    let stderr = merge_refused(&["--format", "json"], &files);
    assert!(
        stderr.contains("a.json ended")
            && stderr.contains("before")
            && stderr.contains("b.json started"),
        "{stderr}"
    );
    let (merged, runs) = merge_files(&files, &["--allow-apart"]);
    assert_eq!(u(&merged, "/complete"), 800);
    let mut union = decode_histogram(runs[0]["histograms"]["total"].as_str().unwrap()).unwrap();
    union
        .add(decode_histogram(runs[1]["histograms"]["total"].as_str().unwrap()).unwrap())
        .unwrap();
    // The merged histogram holds exactly the union's samples, value by value.
    let merged_hist = decode_histogram(merged["histograms"]["total"].as_str().unwrap()).unwrap();
    let counts = |h: &hdrhistogram::Histogram<u64>| -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    };
    assert_eq!(
        counts(&merged_hist),
        counts(&union),
        "merged histogram is the union"
    );
    // Its statistics are the union's: counts and quantiles exactly; mean and
    // sd are float sums, equal up to rounding in the last place.
    let expect = serde_json::to_value(Summary::of(&union)).unwrap();
    for (key, want) in expect.as_object().unwrap() {
        let got = &merged["latency_ms"][key];
        let (g, w) = (got.as_f64().unwrap(), want.as_f64().unwrap());
        if key == "mean" || key == "stdev" {
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{key}: {g} vs {w}"
            );
        } else {
            assert_eq!(got, want, "merged {key} is the union's");
        }
    }
    // Throughput counts the time some run was measuring: here both runs'
    // times, not the gap between them.
    let t = merged["time_taken_s"].as_f64().unwrap();
    let sum: f64 = runs
        .iter()
        .map(|r| r["time_taken_s"].as_f64().unwrap())
        .sum();
    assert!((t - sum).abs() < 1e-5, "{t} vs {sum}");
}

#[test]
fn merge_refuses_to_mix_open_and_closed_loop_runs() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/500B.html");
    let mut files = Vec::new();
    for (name, extra) in [
        ("open.json", &["--rate", "1000"][..]),
        ("closed.json", &[][..]),
    ] {
        let path = dir.path().join(name);
        let out = path.to_str().unwrap();
        let args = [
            &[
                "-q", "-n", "100", "-c", "2", "--format", "json", "--out", out,
            ][..],
            extra,
            &[url.as_str()],
        ]
        .concat();
        let (_, err, code) = bench_text(&args);
        assert_eq!(code, 0, "{err}");
        files.push(path);
    }
    let out = Command::new(loadlab_bin())
        .arg("merge")
        .args(&files)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("open.json") && stderr.contains("closed.json"),
        "{stderr}"
    );
    // Two open-loop runs merge; their rates add up. (The same run under
    // a second name: one file given twice is refused.)
    let copy = dir.path().join("open-2.json");
    std::fs::copy(&files[0], &copy).unwrap();
    let out = Command::new(loadlab_bin())
        .args(["merge", "--format", "json"])
        .args([&files[0], &copy])
        .output()
        .unwrap();
    assert!(out.status.success());
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged["run"]["rate"], 2000.0);
}

#[test]
fn a_runs_summaries_are_those_of_its_own_histograms() {
    use loadlab::bench::stats::{decode_histogram, Summary};
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    for extra in [&[][..], &["--rate", "2000"][..]] {
        let args = [&["-n", "300", "-c", "4"][..], extra, &[url.as_str()]].concat();
        let r = bench_json(&args);
        for (summary, hist) in [
            ("latency_ms", "total"),
            ("connect_ms", "connect"),
            ("waiting_ms", "waiting"),
            ("processing_ms", "processing"),
            ("corrected_latency_ms", "corrected"),
        ] {
            let Some(encoded) = r["histograms"][hist].as_str() else {
                assert!(r[summary].is_null(), "{extra:?}: {summary}");
                continue;
            };
            let h = decode_histogram(encoded).unwrap();
            let expect = serde_json::to_value(Summary::of(&h)).unwrap();
            for (key, want) in expect.as_object().unwrap() {
                let got = &r[summary][key];
                let (g, w) = (got.as_f64().unwrap(), want.as_f64().unwrap());
                // Counts, extremes and quantiles are exact; mean and sd
                // are full-precision floats, and serde_json's default
                // parser may land one unit in the last place off.
                if key == "mean" || key == "stdev" {
                    assert!(
                        (g - w).abs() <= 1e-12 * w.abs().max(1e-300),
                        "{extra:?}: {summary}.{key}: {g} vs {w}"
                    );
                } else {
                    assert_eq!(got, want, "{extra:?}: {summary}.{key} of histograms.{hist}");
                }
            }
        }
    }
}

#[test]
fn merge_series_csv_is_the_merged_per_second_series() {
    let (_server, dir, files) = two_runs_one_after_the_other();
    let csv = dir.path().join("merged-series.csv");
    let csv_arg = csv.to_str().unwrap();
    let (merged, _) = merge_files(&files, &["--allow-apart", "--series-csv", csv_arg]);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(loadlab::bench::render::SERIES_HEADER));
    // Row by row the merged JSON's series, which adds up to the merged total.
    let complete: Vec<u64> = lines
        .map(|l| l.split(',').nth(3).unwrap().parse().unwrap())
        .collect();
    let series: Vec<u64> = merged["series"]["complete"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(complete, series);
    assert_eq!(complete.iter().sum::<u64>(), 800);

    // It may not overwrite an input, nor the report.
    for (flags, why) in [
        (
            vec!["--series-csv", files[0].to_str().unwrap()],
            "is one of the files to merge",
        ),
        (
            vec!["--series-csv", csv_arg, "--out", csv_arg],
            "name the same file",
        ),
    ] {
        let stderr = merge_refused(&[&["--allow-apart"][..], &flags].concat(), &files);
        assert!(
            stderr.contains(why) && stderr.lines().count() == 1,
            "{stderr}"
        );
    }
}
