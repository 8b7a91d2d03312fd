//! Sweeps against sweeps: the same server twice (A/A) stays within the
//! noise; a server made 1.5 x slower is found worse with the right sign;
//! a load that differs is refused unless forced; cells one side lacks are
//! listed.

use super::support::*;

/// Two identical small sweeps of the event loop (3 repeats, 2 cells).
fn a_and_a(dir: &std::path::Path) -> (String, String) {
    let (a, b) = (dir.join("a"), dir.join("b"));
    for out in [&a, &b] {
        sweep(
            &[
                "-T",
                "model:event-loop",
                "--concurrency",
                "2,8",
                "--requests",
                "2000",
                "--repeat",
                "3",
            ],
            out,
        );
    }
    (a.display().to_string(), b.display().to_string())
}

#[test]
fn the_same_server_twice_is_mostly_within_the_noise() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = a_and_a(dir.path());
    let doc = compare_json(&[&a, "--vs", &b]);
    let rows = verdicts(&doc);
    assert_eq!(doc["cells"].as_array().unwrap().len(), 2, "{doc}");
    let decided = rows
        .iter()
        .filter(|r| r.2 == "better" || r.2 == "worse")
        .count();
    // 95 % intervals: about one row in twenty is decided by chance.
    assert!(decided * 3 <= rows.len(), "too many decided: {rows:?}");
    for (_, metric, verdict, _) in &rows {
        if metric == "rss" {
            assert_eq!(verdict, "~ (one run)", "one server process a sweep");
        }
    }
    let (text, _, code) = compare(&[&a, &b]);
    assert_eq!(code, 0);
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with("A: "), "the header comes first: {text}");
    assert!(text.contains("machine: same"), "{text}");
    assert!(
        text.contains("load settings: A 2000 requests; B 2000 requests"),
        "{text}"
    );
}

#[test]
fn a_server_made_slower_is_found_worse_with_the_right_sign() {
    let dir = tempfile::tempdir().unwrap();
    // 10 ms then 15 ms a request: the sleep, not Python's own time or a
    // busy host, sets the rate.
    let target = slow_python(dir.path(), 0.010);
    let args = |out: &std::path::Path, extra: &[&str]| {
        let mut a = vec![
            "-T",
            "model:event-loop",
            "-T",
            &target,
            "--baseline",
            "model:event-loop",
            "--concurrency",
            "4",
            "--requests",
            "200",
            "--repeat",
            "3",
        ];
        a.extend(extra);
        sweep(&a, out)
    };
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    args(&a, &[]);
    set_delay(dir.path(), 0.015);
    args(&b, &[]);
    let (a, b) = (a.display().to_string(), b.display().to_string());
    let doc = compare_json(&[&a, "--vs", &b]);
    let cell = doc["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["a"]["target"].as_str().unwrap().starts_with("cmd:"))
        .expect("the python cell is common");
    let metric = |name: &str| {
        cell["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"] == name)
            .cloned()
            .unwrap()
    };
    let rps = metric("rps");
    assert_eq!(rps["verdict"], "worse", "{cell}");
    let r = rps["ratio"]["estimate"].as_f64().unwrap();
    assert!(r < 0.85 && r > 0.5, "about 2/3 of the rate: {rps}");
    assert!(rps["ratio"]["ci95_high"].as_f64().unwrap() < 1.0);
    // The baseline ran in both sweeps: the double ratio is there too.
    assert!(rps["double_ratio"]["estimate"].as_f64().is_some(), "{rps}");
    let p50 = metric("p50");
    assert_eq!(p50["verdict"], "worse", "{cell}");
    assert!(p50["ratio"]["estimate"].as_f64().unwrap() > 1.2, "{p50}");
    // The gate: a fall of more than 5 % fails, of more than 60 % does not.
    let (out, err, code) = compare(&[&a, &b, "--fail-on", "rps<-5%"]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        err.contains("--fail-on rps<-5%") && err.contains("cmd:python3"),
        "{err}"
    );
    let (_, err, code) = compare(&[&a, &b, "--fail-on", "rps<-60%,p99>+400%"]);
    assert_eq!(code, 0, "{err}");

    // In a sweep: --compare-to puts the comparison in the new report's
    // findings and page.
    let c = dir.path().join("c");
    args(&c, &["--compare-to", &a]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(c.join("summary.json")).unwrap()).unwrap();
    let said = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "compare")
        .unwrap_or_else(|| panic!("a compare finding: {json:#}"));
    let text = said["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("Against the earlier run {a} "))
            && text.contains("requests/s ")
            && text.contains(", worse"),
        "{text}"
    );
    let md = std::fs::read_to_string(c.join("summary.md")).unwrap();
    assert!(
        md.contains(&format!("## Against the earlier run {a}")),
        "{md}"
    );
    // A directory that is not a result is refused before any run.
    let o = std::process::Command::new(crate::common::loadlab_bin())
        .args(["sweep", "-T", "model:event-loop", "--compare-to"])
        .arg(dir.path().join("nothing"))
        .arg("--out")
        .arg(dir.path().join("d"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.trim().lines().count() == 1 && err.contains("--compare-to: "),
        "{err}"
    );
    assert!(!dir.path().join("d").join("raw.csv").exists());
}

#[test]
fn a_different_load_is_refused_unless_forced_and_lone_cells_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let run = |c: &str, n: &str, out: &std::path::Path| {
        sweep(
            &[
                "-T",
                "model:event-loop",
                "--concurrency",
                c,
                "--requests",
                n,
                "--repeat",
                "2",
            ],
            out,
        )
    };
    run("1,2", "600", &a);
    run("2,4", "900", &b);
    let (a, b) = (a.display().to_string(), b.display().to_string());
    let (_, err, code) = compare(&[&a, &b]);
    assert_eq!(code, 2);
    let line = one_line(&err);
    assert!(
        line.contains("--force") && line.contains("900 requests"),
        "{line}"
    );
    let (text, err, code) = compare(&[&a, &b, "--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("load differs: 600 requests / 900 requests"),
        "{text}"
    );
    assert!(text.contains("shown (--force)"), "{text}");
    assert!(text.contains("Cells on one side only"), "{text}");
    assert!(text.contains("| A only | model:event-loop | c=1"), "{text}");
    assert!(text.contains("| B only | model:event-loop | c=4"), "{text}");
    // Another machine is a warning in the header, not a refusal.
    let machine = std::path::Path::new(&b).join("machine.json");
    let mut m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&machine).unwrap()).unwrap();
    m["cpu_model"] = "Other CPU".into();
    std::fs::write(&machine, m.to_string()).unwrap();
    let (text, err, code) = compare(&[&a, &b, "--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("warning: different machine: A "), "{text}");
    assert!(text.contains("B Other CPU"), "{text}");
}
