//! The kernel's TCP counters over a bench run: read from /proc/net, they
//! rise with what the run did (each new connection is an active open), and
//! the text report names them.

use crate::common::bench::{bench_json, bench_text, u};
use crate::common::*;

#[test]
fn a_run_without_keep_alive_shows_its_connections_as_active_opens() {
    let server = TestServer::start("event-loop", &[]);
    let url = server.url("/500B.html");
    // 60 requests without -k: 60 connections, each an active open of this
    // namespace (other traffic may add more, never fewer).
    let r = bench_json(&["-n", "60", "-c", "3", &url]);
    assert_eq!(u(&r, "/failed"), 0, "{}", r["errors"]);
    let k = &r["kernel_tcp"];
    assert!(u(&r, "/kernel_tcp/ActiveOpens") >= 60, "{k}");
    // Its own count, warm-up included, is what ActiveOpens is set against.
    assert_eq!(u(&r, "/connections_opened"), 60, "{k}");
    for name in ["ListenOverflows", "ListenDrops", "RetransSegs", "OutRsts"] {
        assert!(k[name].is_u64(), "{name} missing: {k}");
    }
    let (text, err, code) = bench_text(&["-q", "-n", "20", &url]);
    assert_eq!(code, 0, "{err}");
    let line = text
        .lines()
        .find(|l| l.contains("Kernel TCP counters over the run"))
        .unwrap_or_else(|| panic!("no kernel line: {text}"));
    assert!(line.contains("ActiveOpens "), "{line}");
}
