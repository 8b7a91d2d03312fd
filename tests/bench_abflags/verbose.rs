//! ab's -v beside real ab: the request sent once, each response head,
//! warnings for non-2xx answers at 2, every status code at 3; and where
//! the lines go when stdout carries a JSON report.

use super::report::ab;
use crate::common::bench::bench_text;
use crate::common::*;

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

#[test]
fn v_logs_request_heads_and_status_codes_as_ab_does() {
    let server = TestServer::start("event-loop", &[]);
    let ok = server.url("/500B.html");
    let missing = server.url("/status/404");
    for (level, url, n) in [
        ("2", &ok, 3),
        ("2", &missing, 3),
        ("3", &ok, 3),
        ("1", &ok, 3),
    ] {
        let args = ["-v", level, "-n", "3", url.as_str()];
        let theirs = ab(&args);
        let (ours, err, _) = bench_text(&args);
        let lines = [
            "INFO: GET header == \n---\nGET ",
            "LOG: header received:\nHTTP/1.1 ",
            "WARNING: Response code not 2xx (404)",
            "LOG: Response code = 200",
        ];
        for l in lines {
            assert_eq!(
                count(&ours, l),
                count(&theirs, l),
                "-v {level} {url}: {l:?}\nours:\n{ours}{err}\nab's:\n{theirs}"
            );
        }
        let heads = count(&ours, "LOG: header received:");
        assert_eq!(heads, if level == "1" { 0 } else { n }, "{ours}");
    }
}

#[test]
fn v_lines_go_to_stderr_when_stdout_carries_json() {
    let server = TestServer::start("event-loop", &[]);
    let (out, err, code) = bench_text(&[
        "-v",
        "3",
        "-q",
        "--format",
        "json",
        "-n",
        "4",
        &server.url("/500B.html"),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is JSON alone");
    assert_eq!(v["complete"], 4);
    assert_eq!(count(&err, "LOG: Response code = 200"), 4, "{err}");
    assert_eq!(count(&err, "INFO: GET header =="), 1, "{err}");
}
