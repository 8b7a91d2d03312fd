//! Per-request records (`--per-request`, ab's `-g`) and requests over time
//! (the JSON `series`, `--series-csv`): they agree with the run's totals
//! and histograms, ab's layout is ab's, and merged series line up second
//! by second.

use std::path::Path;

use crate::common::bench::{bench_files, bench_json, bench_text, merge_files, u};
use crate::common::*;
use loadlab::bench::stats::{decode_histogram, new_histogram};
use serde_json::Value;

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The rows of a CSV or TSV file, header first.
fn rows(path: &Path, sep: char) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(sep).map(String::from).collect())
        .collect()
}

/// The histogram in the JSON at `name`, as (value, count) pairs.
fn hist_counts(v: &Value, name: &str) -> Vec<(u64, u64)> {
    let h = decode_histogram(v["histograms"][name].as_str().unwrap()).unwrap();
    h.iter_recorded()
        .map(|x| (x.value_iterated_to(), x.count_at_value()))
        .collect()
}

/// Seconds as written in the records, back to µs.
fn us(field: &str) -> u64 {
    let (s, frac) = field.split_once('.').unwrap();
    assert_eq!(frac.len(), 6, "{field}");
    s.parse::<u64>().unwrap() * 1_000_000 + frac.parse::<u64>().unwrap()
}

#[test]
fn per_request_rows_are_the_completed_requests_and_their_histogram() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/500B.html");
    // Closed loop with and without keep-alive, and open loop (whose
    // reported latency counts from the schedule: lag + response time).
    for (extra, hist) in [
        (&[][..], "total"),
        (&["-k"][..], "total"),
        (&["--rate", "3000"][..], "corrected"),
    ] {
        let file = dir.path().join("pr.csv");
        let args = [
            &["-n", "600", "-c", "4", "--per-request", path_str(&file)][..],
            extra,
            &[url.as_str()],
        ]
        .concat();
        let v = bench_json(&args);
        let rows = rows(&file, ',');
        assert_eq!(
            rows[0].join(","),
            loadlab::bench::records::PER_REQUEST_HEADER
        );
        let rows = &rows[1..];
        assert_eq!(rows.len() as u64, u(&v, "/complete"), "{extra:?}");
        assert_eq!(u(&v, "/failed"), 0);
        // The records' latencies, recorded into a histogram like the
        // run's, give the run's histogram value for value.
        let mut h = new_histogram();
        for r in rows {
            let total = us(&r[0]);
            let lag = us(&r[9]);
            assert_eq!(r[6], "200");
            assert_eq!(r[8], "500");
            // The phases add up to the response time (each is truncated
            // to whole µs, so to within 3 µs).
            let phases: u64 = [1, 3, 4, 5].iter().map(|&i| us(&r[i])).sum();
            assert!(phases <= total && total - phases <= 3, "{r:?}");
            h.record(if hist == "corrected" {
                lag + total
            } else {
                total
            })
            .unwrap();
        }
        let mine: Vec<(u64, u64)> = h
            .iter_recorded()
            .map(|x| (x.value_iterated_to(), x.count_at_value()))
            .collect();
        assert_eq!(mine, hist_counts(&v, hist), "{extra:?}");
        // Offsets are when requests started, in order, within the run.
        let offsets: Vec<u64> = rows.iter().map(|r| us(&r[7])).collect();
        assert!(offsets.windows(2).all(|w| w[0] <= w[1]));
        let taken = (v["time_taken_s"].as_f64().unwrap() * 1e6) as u64;
        assert!(*offsets.last().unwrap() <= taken, "{offsets:?} {taken}");
    }
}

/// Rows of an ab `-g` file after the header: starttime has ab's shape
/// ("Wed Nov 25 14:19:06 2026"), and every other column is an integer.
fn check_gnuplot_rows(rows: &[Vec<String>], who: &str) -> Vec<[u64; 5]> {
    rows.iter()
        .map(|r| {
            assert_eq!(r.len(), 6, "{who}: {r:?}");
            let t: Vec<&str> = r[0].split(' ').collect();
            assert_eq!(t.len(), 5, "{who}: {r:?}");
            assert_eq!((t[0].len(), t[1].len(), t[2].len()), (3, 3, 2), "{who}");
            assert_eq!((t[3].len(), t[4].len()), (8, 4), "{who}: {r:?}");
            let n: Vec<u64> = r[1..].iter().map(|x| x.parse().unwrap()).collect();
            [n[0], n[1], n[2], n[3], n[4]]
        })
        .collect()
}

#[test]
fn g_file_has_abs_header_columns_and_order() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/500B.html");
    let theirs = dir.path().join("ab.tsv");
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let out = tool("ab")
        .args(["-q", "-n", "300", "-c", "6", "-g", path_str(&theirs), &url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours = dir.path().join("ll.tsv");
    let v = bench_json(&["-n", "300", "-c", "6", "-g", path_str(&ours), &url]);
    let after = before + 600;
    let (ab_rows, ll_rows) = (rows(&theirs, '\t'), rows(&ours, '\t'));
    // The header byte for byte, and one row per completed request.
    assert_eq!(ll_rows[0], ab_rows[0]);
    assert_eq!(ll_rows.len(), ab_rows.len());
    assert_eq!(ll_rows.len() as u64 - 1, u(&v, "/complete"));
    let ab_vals = check_gnuplot_rows(&ab_rows[1..], "ab");
    let ll_vals = check_gnuplot_rows(&ll_rows[1..], "loadlab");
    // The same zone and clock: ab's starttime for a second is ours.
    let ctime_of = |rows: &[Vec<String>], vals: &[[u64; 5]], s: u64| {
        vals.iter()
            .position(|x| x[0] == s)
            .map(|i| rows[i + 1][0].clone())
    };
    for (vals, who) in [(&ab_vals, "ab"), (&ll_vals, "loadlab")] {
        for x in vals.iter() {
            let [seconds, ctime, dtime, ttime, _wait] = *x;
            assert!((before..=after).contains(&seconds), "{who}: {x:?}");
            // dtime and ctime are each rounded: their sum is ttime ± 1.
            assert!((ctime + dtime).abs_diff(ttime) <= 1, "{who}: {x:?}");
        }
        // ab writes its rows sorted by total time (ttime).
        assert!(vals.windows(2).all(|w| w[0][3] <= w[1][3]), "{who}");
    }
    if let (Some(a), Some(b)) = (
        ctime_of(&ab_rows, &ab_vals, ab_vals[0][0]),
        ctime_of(&ll_rows, &ll_vals, ab_vals[0][0]),
    ) {
        assert_eq!(a, b, "the same second is written the same way");
    }
}

/// The JSON series' column `name`.
fn column(v: &Value, name: &str) -> Vec<u64> {
    v["series"][name]
        .as_array()
        .unwrap_or_else(|| panic!("series.{name} in {v}"))
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn the_series_sums_to_the_totals() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let csv_path = dir.path().join("series.csv");
    // A time-limited run over three seconds, keep-alive.
    let v = bench_json(&[
        "-t",
        "2.5",
        "-c",
        "4",
        "-k",
        "--series-csv",
        path_str(&csv_path),
        &server.url("/500B.html"),
    ]);
    let complete = column(&v, "complete");
    assert_eq!(complete.len(), 3, "{complete:?}");
    assert!(complete.iter().all(|&c| c > 0), "{complete:?}");
    assert_eq!(complete.iter().sum::<u64>(), u(&v, "/complete"));
    assert_eq!(column(&v, "failed").iter().sum::<u64>(), u(&v, "/failed"));
    let answered: u64 = column(&v, "answered").iter().sum();
    assert_eq!(answered, u(&v, "/latency_ms/count"));
    assert_eq!(u(&v, "/series/beyond_limit"), 0);
    // The largest per-second maximum is the histogram's maximum (to the
    // histogram's precision), and the sums give the run's mean.
    let h = decode_histogram(v["histograms"]["total"].as_str().unwrap()).unwrap();
    let max = *column(&v, "latency_max_us").iter().max().unwrap();
    assert_eq!(h.highest_equivalent(max), h.max());
    let sum: u64 = column(&v, "latency_sum_us").iter().sum();
    let mean_ms = v["latency_ms"]["mean"].as_f64().unwrap();
    let mine = sum as f64 / answered as f64 / 1000.0;
    assert!(
        (mine - mean_ms).abs() <= mean_ms * 0.002 + 0.001,
        "{mine} {mean_ms}"
    );
    // The CSV holds the same seconds; the last is the partial half second.
    let rows = rows(&csv_path, ',');
    assert_eq!(rows[0].join(","), loadlab::bench::render::SERIES_HEADER);
    let got: Vec<u64> = rows[1..].iter().map(|r| r[3].parse().unwrap()).collect();
    assert_eq!(got, complete);
    let spans: Vec<f64> = rows[1..].iter().map(|r| r[2].parse().unwrap()).collect();
    assert_eq!(spans[..2], [1.0, 1.0]);
    assert!((spans[2] - 0.5).abs() < 1e-3, "{spans:?}");
    let start = u(&v, "/series/start_unix_us");
    assert_eq!(
        rows[1][1],
        format!("{}.{:06}", start / 1_000_000, start % 1_000_000)
    );
}

#[test]
fn the_series_counts_failures_where_they_happened() {
    // Nothing listens on a port just closed: every request fails.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let v = bench_json(&["-n", "50", "-c", "2", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(u(&v, "/failed"), 50);
    assert_eq!(column(&v, "failed").iter().sum::<u64>(), 50);
    assert_eq!(column(&v, "complete").iter().sum::<u64>(), 50);
    assert_eq!(column(&v, "answered").iter().sum::<u64>(), 0);
}

#[test]
fn merged_series_add_up_second_by_second_on_their_start_times() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/500B.html");
    // One after the other: b starts about 1.6 s after a, so its second 0
    // lies on a's second 1 or 2.
    let load: &[&str] = &["-t", "1.5", "-c", "2"];
    let files = bench_files(dir.path(), &url, &[("a.json", load), ("b.json", load)]);
    // Runs one after the other do not overlap: merge takes them when told.
    let (m, runs) = merge_files(&files, &["--allow-apart"]);
    let (sa, sb) = (
        u(&runs[0], "/series/start_unix_us"),
        u(&runs[1], "/series/start_unix_us"),
    );
    assert!(sb > sa);
    assert_eq!(u(&m, "/series/start_unix_us"), sa);
    let shift = ((sb - sa + 500_000) / 1_000_000) as usize;
    assert!((1..=4).contains(&shift), "b started {} µs after a", sb - sa);
    for name in [
        "complete",
        "failed",
        "answered",
        "latency_sum_us",
        "latency_max_us",
    ] {
        let (a, b) = (column(&runs[0], name), column(&runs[1], name));
        let mut want = vec![0; a.len().max(shift + b.len())];
        for (k, x) in a.iter().enumerate() {
            want[k] = *x;
        }
        for (k, x) in b.iter().enumerate() {
            want[k + shift] = match name {
                "latency_max_us" => want[k + shift].max(*x),
                _ => want[k + shift] + x,
            };
        }
        assert_eq!(column(&m, name), want, "{name}");
    }
    assert_eq!(
        column(&m, "complete").iter().sum::<u64>(),
        u(&m, "/complete")
    );
}

#[test]
fn records_past_their_bound_and_clashing_files_are_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.csv");
    let f = path_str(&f);
    let max = loadlab::bench::records::MAX_RECORDS.to_string();
    let over = (loadlab::bench::records::MAX_RECORDS + 1).to_string();
    for (args, says) in [
        (
            &["-n", &over, "--per-request", f, "http://127.0.0.1:9/"][..],
            format!("keep at most {max} requests"),
        ),
        (
            &[
                "-n",
                "5",
                "-g",
                f,
                "--per-request",
                f,
                "http://127.0.0.1:9/",
            ][..],
            "--per-request and -g name the same file".to_string(),
        ),
        (
            &[
                "-n",
                "5",
                "--series-csv",
                "/nonexistent-dir/s.csv",
                "http://127.0.0.1:9/",
            ][..],
            "--series-csv /nonexistent-dir/s.csv: no directory".to_string(),
        ),
    ] {
        let (stdout, stderr, code) = bench_text(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty());
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(&says), "{args:?}: {stderr}");
    }
    assert!(!Path::new(f).exists(), "nothing written");
}

#[test]
fn regression_responses_read_at_the_time_limit_made_a_second_after_it() {
    // The batch of responses that crosses -t's limit is counted; it went
    // into second 1 of a 1-second run, a second the run never had.
    let server = TestServer::start("event-loop", &[]);
    let v = bench_json(&["-t", "1", "-c", "20", "-k", &server.url("/500B.html")]);
    let complete = column(&v, "complete");
    assert_eq!(complete.len(), 1, "{complete:?}");
    assert_eq!(complete[0], u(&v, "/complete"));
}
