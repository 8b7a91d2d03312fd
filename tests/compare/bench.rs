//! Bench JSONs as sides: each file one run, a side's files repeats of
//! one cell; one file a side decides nothing.

use super::support::*;
use crate::common::TestServer;

#[test]
fn bench_jsons_are_repeats_and_one_run_a_side_decides_nothing() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/");
    let file = |name: &str| {
        let f = bench_json(
            &["-n", "2000", "-c", "4", "-k"],
            &url,
            &dir.path().join(name),
        );
        f.display().to_string()
    };
    let a: Vec<String> = (1..=3).map(|i| file(&format!("a{i}.json"))).collect();
    let b: Vec<String> = (1..=3).map(|i| file(&format!("b{i}.json"))).collect();
    let mut args: Vec<&str> = a.iter().map(String::as_str).collect();
    args.push("--vs");
    args.extend(b.iter().map(String::as_str));
    let doc = compare_json(&args);
    assert_eq!(doc["a"]["kind"], "bench");
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 1, "{doc}");
    assert_eq!(
        (
            cells[0]["a"]["runs"].as_u64(),
            cells[0]["b"]["runs"].as_u64()
        ),
        (Some(3), Some(3))
    );
    let rows = verdicts(&doc);
    let names: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(
        names,
        ["rps", "p50", "p99", "p999"],
        "bench does not watch the server"
    );
    let rps = &cells[0]["metrics"][0];
    assert!(rps["ratio"]["ci95_low"].as_f64().is_some(), "{rps}");
    // One file a side: a ratio, no verdict.
    let doc = compare_json(&[&a[0], &b[0]]);
    for (_, m, v, r) in verdicts(&doc) {
        assert!(r.is_some(), "{m}");
        assert!(v == "~ (one run)" || v == "~ (client-bound)", "{m}: {v}");
    }
}
