//! The expected results of `loadlab check` for loadlab's own models at
//! their default workers, nginx and Go's net/http: every check passes,
//! none is skipped, except that the iterative model fails
//! `slowloris-blocks` by design, and says so. No threshold or server
//! timeout was changed to get there.

use std::sync::atomic::{AtomicUsize, Ordering};

use loadlab::catalog::models::Model;

use super::support::check_json;
use crate::common::require_nginx;

/// The checks each target fails (all others pass; none skipped).
fn expected_failures(target: &str) -> &'static [&'static str] {
    match target {
        "model:iterative" => &["slowloris-blocks"],
        _ => &[],
    }
}

fn holds(target: &str, env: &[(&str, &str)]) {
    let c = check_json(target, &[], env);
    let want = expected_failures(target);
    assert_eq!(c.with("fail"), want, "{target}: {}\n{}", c.doc, c.stderr);
    assert!(c.with("warn").is_empty(), "{target}: {}", c.doc);
    assert!(c.with("skip").is_empty(), "{target}: {}", c.doc);
    assert_eq!(c.verdicts().len(), 25, "{target}: every check ran");
    // nginx and Go serve a directory loadlab chose, with a canary above
    // it; the models serve built-in files, so they get none.
    let aimed = c.evidence("path-traversal");
    assert_eq!(
        aimed.contains("canary planted"),
        !target.starts_with("model:"),
        "{target}: {aimed}"
    );
    assert_eq!(
        c.code,
        if want.is_empty() { 0 } else { 3 },
        "{target}: {}",
        c.stderr
    );
    if !want.is_empty() {
        // One stderr line names what failed.
        assert!(c.stderr.contains("slowloris-blocks"), "{}", c.stderr);
        let note = c.doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == "slowloris-blocks")
            .and_then(|x| x["note"].as_str())
            .unwrap_or_default()
            .to_string();
        assert!(note.contains("by design"), "{note}");
    }
}

/// Two models at a time, as the zoo checks a server's two variants at
/// once: a check mostly waits on its target's timeouts, and one that
/// judges a shared kernel counter counts only its own connections.
#[test]
fn every_model_passes_its_expected_results() {
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    while let Some(m) = Model::ALL.get(next.fetch_add(1, Ordering::SeqCst)) {
                        holds(&format!("model:{m}"), &[]);
                    }
                })
            })
            .collect();
        for w in workers {
            if let Err(panic) = w.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}

#[test]
fn nginx_passes_every_check() {
    require_nginx();
    holds("nginx", &[]);
}

#[test]
fn go_net_http_passes_every_check() {
    let cache = tempfile::tempdir().unwrap();
    let xdg = cache.path().to_string_lossy().into_owned();
    holds("go", &[("XDG_CACHE_HOME", xdg.as_str())]);
}
