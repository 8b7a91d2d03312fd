//! Helpers every lab test shares: the one-at-a-time lock, running `loadlab
//! sweep` (and waiting for one, bounded), and checking the files a sweep
//! derives from raw.csv.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::common::*;
use loadlab::results::raw::RawRow;
use serde_json::Value;

/// The lab's tests run one at a time: several start servers and load them
/// flat out for seconds (the no-argument run, the E3-E5 presets), and the
/// ones that watch a target's /proc entries or time a Ctrl-C would race
/// that load on a 2-core machine.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn sweep(args: &[&str], out: &Path) -> (String, String, i32) {
    sweep_env(args, out, &[], true)
}

/// Runs `loadlab sweep ARGS --out OUT` with extra environment; `quiet`
/// adds -q (without it, stderr has one line per run: no terminal here).
pub fn sweep_env(
    args: &[&str],
    out: &Path,
    env: &[(&str, &str)],
    quiet: bool,
) -> (String, String, i32) {
    let mut cmd = Command::new(loadlab_bin());
    cmd.arg("sweep").args(args).arg("--out").arg(out);
    if quiet {
        cmd.arg("-q");
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("run loadlab sweep");
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

/// `dir/www` holding one file, for a foreign server to serve.
pub fn www_with(dir: &Path, name: &str, body: &[u8]) -> PathBuf {
    let www = dir.join("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join(name), body).unwrap();
    www
}

pub fn ok_rows(rows: &[RawRow]) {
    for r in rows {
        assert!(
            r.error.is_empty(),
            "run {} against {} failed: {}",
            r.run_id,
            r.target,
            r.error
        );
        assert_eq!(r.failed, 0, "{r:?}");
        assert!(r.complete > 0, "{r:?}");
    }
}

pub fn sweep_json(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("sweep.json")).expect("sweep.json"))
        .expect("sweep.json is JSON")
}

pub fn summary_json(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).expect("summary.json"))
        .expect("summary.json is JSON")
}

/// Checks every file a sweep derives from raw.csv: the summaries agree
/// with each other and with `configs` configurations, every chart named in
/// the page is an SVG with data on it, and `loadlab report DIR` writes the
/// very same bytes the sweep wrote.
pub fn check_derived(dir: &Path, configs: usize, charts: &[impl AsRef<str>]) {
    let files = derived(dir);
    let json = summary_json(dir);
    assert_eq!(json["schema"], "loadlab-summary/4");
    assert!(json["machine"]["cores"].as_u64().is_some_and(|c| c > 0));
    let confs = json["configurations"].as_array().expect("configurations");
    assert_eq!(confs.len(), configs, "summary.json configurations");
    let csv_text = String::from_utf8_lossy(&files[Path::new("summary.csv")]).to_string();
    assert!(
        csv_text.starts_with(
            "experiment,target,workers,cpus,path,concurrency,requests,duration_s,keepalive,"
        ),
        "{csv_text}"
    );
    assert_eq!(
        csv_text.lines().count(),
        configs + 1,
        "summary.csv: header + one line per configuration"
    );
    let md = String::from_utf8_lossy(&files[Path::new("summary.md")]).to_string();
    let html = String::from_utf8_lossy(&files[Path::new("index.html")]).to_string();
    assert!(md.starts_with("# loadlab report"));
    for c in confs {
        let target = c["target"].as_str().expect("target");
        assert!(
            md.contains(target) && html.contains(target),
            "{target} in summary.md and index.html"
        );
        assert!(
            c["requests_per_second_mean"]
                .as_f64()
                .is_some_and(|v| v > 0.0),
            "{c}"
        );
    }
    let svgs: Vec<String> = files
        .keys()
        .filter(|p| p.starts_with("charts"))
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    let mut want: Vec<String> = charts.iter().map(|c| c.as_ref().to_string()).collect();
    want.sort();
    assert_eq!(svgs, want, "charts/");
    for name in &svgs {
        let svg = String::from_utf8_lossy(&files[&PathBuf::from("charts").join(name)]).to_string();
        assert!(
            svg.contains("<svg") && svg.contains("class=\"marker\"") && svg.contains("</title>"),
            "{name} has drawn markers with tooltips"
        );
        let id = format!("<figure id=\"chart-{}\">", name.trim_end_matches(".svg"));
        assert!(html.contains(&id), "index.html embeds {name}");
        assert!(
            md.contains(&format!("(charts/{name})")),
            "summary.md links {name}"
        );
    }
    assert!(html.contains("Failed runs") && html.contains("No run failed."));

    let out = Command::new(loadlab_bin())
        .arg("report")
        .arg(dir)
        .output()
        .expect("run loadlab report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        derived(dir) == files,
        "loadlab report DIR rewrote the sweep's files differently"
    );
}

/// The five charts of one experiment (and path).
pub fn charts_of(stem: &str) -> Vec<String> {
    ["rps", "p50", "p99", "cpu-per-request", "rss"]
        .iter()
        .map(|m| format!("{stem}-{m}.svg"))
        .collect()
}

/// Waits (bounded) for the process to end; its exit code and output.
pub fn finish(mut job: Child, limit: Duration) -> (i32, String, String) {
    let until = Instant::now() + limit;
    let code = loop {
        if let Some(status) = job.try_wait().expect("try_wait") {
            break status.code().unwrap_or(-1);
        }
        if Instant::now() >= until {
            let _ = job.kill();
            panic!("loadlab sweep did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    let mut err = String::new();
    job.stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .unwrap();
    job.stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .unwrap();
    (code, out, err)
}
