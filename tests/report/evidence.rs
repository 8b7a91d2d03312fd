//! What runs recorded beyond their figures reaches every output: violations
//! as a column, a status and a finding; the kernel's TCP counters as a
//! table per experiment and findings (a listen queue that overflowed,
//! other traffic); unknown stays unknown (n/a, null), never 0.

use serde_json::Value;

use super::support::{assert_ok, report, results_dir};

#[test]
fn violations_and_kernel_counters_reach_every_output() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    results_dir(dir);
    assert_ok(&report(dir));
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).expect("json"))
            .expect("parse");
    let configs = json["configurations"].as_array().expect("configurations");
    let of = |exp: &str, target: &str| -> Vec<&Value> {
        configs
            .iter()
            .filter(|c| c["experiment"] == exp && c["target"] == target && c["runs"] != 0)
            .collect()
    };
    // The URL target's every answer carried a violation: counted, and
    // flagged, yet its requests/s stands.
    for c in of("e5", "url:http://127.0.0.1:9/") {
        assert!(c["violations"].as_u64().unwrap() >= 1000, "{c}");
        // The first flag that applies: failed and non-2xx come first.
        if c["failed"] == 0 && c["non_2xx"] == 0 {
            assert_eq!(c["status"], "violations", "{c}");
        }
        assert!(c["rps_mean"].as_f64().unwrap() > 0.0, "{c}");
    }
    for c in of("e5", "model:event-loop") {
        assert_eq!(c["violations"], 0, "{c}");
    }
    // E4's rows predate the columns: unknown, not 0.
    for c in of("e4", "model:thread-pool") {
        assert!(c["violations"].is_null(), "{c}");
        assert!(c["tcp_listen_overflows"].is_null(), "{c}");
    }
    // E3's flood overflowed the listen queue: summed per configuration.
    for c in of("e3", "model:reactors") {
        assert_eq!(c["tcp_listen_overflows"], 12, "{c}");
        assert_eq!(c["tcp_syn_retrans"], 24, "{c}");
    }
    // 300 opens beyond loadlab's 1000 in one E1 cell: other traffic.
    let crowded: Vec<_> = of("e1", "model:thread-per-conn")
        .into_iter()
        .filter(|c| c["concurrency"] == 1000)
        .collect();
    assert_eq!(crowded[0]["tcp_other_opens"], 300, "{}", crowded[0]);

    let kinds: Vec<(&str, &str)> = json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| (f["kind"].as_str().unwrap(), f["text"].as_str().unwrap()))
        .collect();
    let said = |kind: &str, words: &[&str]| {
        kinds
            .iter()
            .any(|(k, t)| *k == kind && words.iter().all(|w| t.contains(w)))
    };
    assert!(
        said(
            "violations",
            &["url:http://127.0.0.1:9/", "bytes-after-body"]
        ),
        "{kinds:?}"
    );
    assert!(
        said(
            "kernel",
            &["model:reactors", "listen-queue overflows", "backlog"]
        ),
        "{kinds:?}"
    );
    assert!(
        said(
            "kernel",
            &["model:thread-per-conn", "300 connections beyond"]
        ),
        "{kinds:?}"
    );
    assert!(
        !said("kernel", &["model:event-loop"]),
        "no counter rose for it: {kinds:?}"
    );

    // The markdown: a violations column, and a kernel table that lists
    // only the cells where a counter rose, E4's absent (not recorded).
    let md = std::fs::read_to_string(dir.join("summary.md")).expect("md");
    assert!(md.contains("| violations |"), "no violations column");
    let url_rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| url:http://127.0.0.1:9/"))
        .collect();
    assert!(!url_rows.is_empty());
    for l in url_rows {
        assert!(l.contains("| 1000 |") && l.contains("violations |"), "{l}");
    }
    assert!(md.contains("### e3: kernel TCP counters"), "{md}");
    assert!(md.contains("### e1: kernel TCP counters"), "{md}");
    assert!(!md.contains("### e4: kernel TCP counters"), "{md}");
    let e1 = &md[md.find("### e1: kernel TCP counters").unwrap()..];
    let e1 = &e1[..e1[4..].find("###").map_or(e1.len(), |i| i + 4)];
    assert_eq!(
        e1.lines().filter(|l| l.starts_with("| model:")).count(),
        1,
        "only the crowded cell: {e1}"
    );
    let html = std::fs::read_to_string(dir.join("index.html")).expect("html");
    assert!(html.contains("kernel TCP counters"));
}
