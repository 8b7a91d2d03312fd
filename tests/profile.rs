//! `sweep --profile` (issue 44 item 2): each target's flame graph from
//! one unmeasured run, static (no script), with whole stacks (at least
//! 90 % of the event loop's user-space samples reach a loadlab function),
//! and its figures in the report's Why section; a host without perf says
//! so in one line and the sweep goes on. Outside the lab's one-at-a-time
//! group: perf records every CPU but keeps only the target's samples.

use loadlab::results::profile::{ProfileFile, PROFILES_DIR, PROFILE_JSON};
use loadlab::results::raw;

use crate::lab::support::{sweep, sweep_env};

/// The sweep both tests make: two models, keep-alive off, one run each.
// model subset: one event loop, one thread per connection.
const ARGS: &[&str] = &[
    "-T",
    "model:event-loop",
    "-T",
    "model:thread-per-conn",
    "--keepalive",
    "off",
    "--concurrency",
    "10",
    "--duration",
    "0.5s",
    "--repeat",
    "1",
    "--no-check",
    "--profile",
];

/// Anything in `text` that would run in a browser.
fn runs_something(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.contains("<script")
        || lower.match_indices(" on").any(|(i, _)| {
            lower[i + 3..].split('=').next().is_some_and(|n| {
                !n.is_empty() && n.len() < 20 && n.chars().all(|c| c.is_ascii_alphabetic())
            })
        })
}

#[test]
fn each_target_gets_a_static_flame_graph_with_whole_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let (_, stderr, code) = sweep(ARGS, &out);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("no flame graphs"), "{stderr}");
    let f: ProfileFile =
        serde_json::from_str(&std::fs::read_to_string(out.join(PROFILE_JSON)).unwrap()).unwrap();
    assert!(f.not_profiled.is_empty(), "{f:#?}");
    assert_eq!(f.profiles.len(), 2, "{f:#?}");
    let at = |t: &str| f.profiles.iter().find(|p| p.target == t).unwrap();
    let el = at("model:event-loop");
    assert!(el.samples >= 20, "{el:#?}");
    let whole = el.user_in_loadlab_pct.unwrap();
    assert!(
        whole >= 90.0,
        "{whole} % of user samples reach loadlab: {el:#?}"
    );
    assert!((0.0..=100.0).contains(&el.kernel_pct) && !el.top_kernel.is_empty());
    // A thread per connection spends its time starting and ending them;
    // the event loop starts none.
    let area = |p: &loadlab::results::profile::Profile, name: &str| {
        p.areas
            .iter()
            .find(|a| a.function == name)
            .map_or(0.0, |a| a.pct)
    };
    let tpc = at("model:thread-per-conn");
    assert!(area(tpc, "thread start and exit") >= 5.0, "{tpc:#?}");
    assert!(area(el, "thread start and exit") < 1.0, "{el:#?}");
    assert_eq!(el.setting, "keep-alive off, c=10, /500B.html");
    for p in &f.profiles {
        let svg = std::fs::read_to_string(out.join(PROFILES_DIR).join(&p.flame_graph)).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("<title>"),
            "{}",
            p.flame_graph
        );
        assert!(!runs_something(&svg), "{} has a script", p.flame_graph);
    }
    // The report: the profile's words and the graph inline, nothing that
    // runs; the measured rows are the sweep's two, not the profile runs.
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_eq!(html.matches("<figure class=\"flame\">").count(), 2);
    assert!(!runs_something(&html));
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("Profile of one unmeasured run (keep-alive off, c=10, /500B.html; ")
            && md.contains("](profiles/flame-model-event-loop.svg)"),
        "{md}"
    );
    assert_eq!(raw::read(&out).unwrap().len(), 2);
    // The README's excerpt is this section's wording: each of its lines,
    // figures aside, starts as the report's do.
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = &readme[readme.find("### Why is it slower?").unwrap()..];
    let start = section.find("```text\n").unwrap() + "```text\n".len();
    let excerpt = &section[start..start + section[start..].find("```").unwrap()];
    for line in excerpt.lines() {
        let head: String = line.chars().take_while(|c| !c.is_ascii_digit()).collect();
        assert!(
            md.lines().any(|l| l.starts_with(&head)),
            "README shows a line the report does not begin so: {line}"
        );
    }
    let tpc_line = md
        .lines()
        .skip_while(|l| !l.starts_with("### model:thread-per-conn"))
        .find(|l| l.starts_with("- "))
        .unwrap();
    for part in [
        "µs of server CPU per request",
        "thread set-up",
        "clone+exit",
        "context switches against",
    ] {
        assert!(tpc_line.contains(part), "{tpc_line}");
    }
}

#[test]
fn without_perf_the_sweep_says_so_in_one_line_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("res");
    let (_, stderr, code) = sweep_env(ARGS, &out, &[("LOADLAB_PERF", "/nonexistent/perf")], true);
    assert_eq!(code, 0, "{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("no flame graphs"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("perf is not installed (Debian: apt-get install linux-perf)"));
    let rows = raw::read(&out).unwrap();
    assert!(rows.len() == 2 && rows.iter().all(|r| r.error.is_empty() && r.complete > 0));
    let f: ProfileFile =
        serde_json::from_str(&std::fs::read_to_string(out.join(PROFILE_JSON)).unwrap()).unwrap();
    assert!(f.profiles.is_empty() && f.not_profiled.len() == 2, "{f:#?}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("Not profiled: perf is not installed"), "{md}");
}
