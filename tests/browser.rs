//! The report pages as a reader sees them, in headless Chromium: a sweep
//! directory (the golden sweep fixture rendered with `loadlab report`) and
//! a stress directory (a small real `loadlab stress` run). Each page must
//! log nothing to the console, draw every chart with all its text inside
//! the chart, load every image, give every marker a tooltip, and open with
//! the Findings section. The check runs as a script in a copy of the page
//! (the page itself has none and its policy forbids them); the same check
//! on a deliberately broken page proves it catches what it looks for.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common;
use common::browser;

fn loadlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(args)
        .output()
        .expect("run loadlab")
}

fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Measures the page once it has loaded and appends the result as JSON in
/// `<pre id="render-check">`. Sizes come from the layout Chromium did, so
/// a label wider than its chart shows here even if an estimate says it
/// fits.
const CHECK: &str = r#"<script>
window.__errors = [];
window.addEventListener('error', function (e) {
  var t = e.target;
  window.__errors.push(t && t !== window ? 'failed to load ' + (t.src || t.outerHTML) : String(e.message));
}, true);
window.addEventListener('load', function () {
  var r = {svgs: 0, empty_svgs: [], overflow: [], markers: 0, untitled_markers: 0,
           imgs: 0, broken_imgs: [], errors: window.__errors, findings_first: false};
  document.querySelectorAll('svg').forEach(function (s, i) {
    r.svgs++;
    var box = s.getBoundingClientRect();
    var content = s.getBBox();
    if (!(box.width > 0 && box.height > 0 && content.width > 0 && content.height > 0)) r.empty_svgs.push(i);
    s.querySelectorAll('text').forEach(function (t) {
      var b = t.getBoundingClientRect();
      if (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 || b.bottom > box.bottom + 1)
        r.overflow.push(t.textContent);
    });
    s.querySelectorAll('.marker').forEach(function (m) {
      r.markers++;
      if (!m.querySelector('title') || !m.querySelector('title').textContent) r.untitled_markers++;
    });
  });
  document.querySelectorAll('img').forEach(function (im) {
    r.imgs++;
    if (!(im.complete && im.naturalWidth > 0)) r.broken_imgs.push(im.getAttribute('src'));
  });
  var first = document.querySelector('h1 + *');
  r.findings_first = !!first && first.id === 'findings' && !!first.querySelector('h2');
  var pre = document.createElement('pre');
  pre.id = 'render-check';
  pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
});
</script>"#;

/// A copy of `page` beside it, without its Content-Security-Policy and
/// with the check script first in its head.
fn instrumented(page: &Path) -> PathBuf {
    let html = std::fs::read_to_string(page).expect("page");
    let html = match html.find("<meta http-equiv=\"Content-Security-Policy\"") {
        Some(open) => {
            let close = open + html[open..].find('>').expect("meta ends") + 1;
            format!("{}{}", &html[..open], &html[close..])
        }
        None => html,
    };
    let at = html.find("<head>").map_or(0, |i| i + "<head>".len());
    let copy = page.with_file_name("check.html");
    std::fs::write(&copy, format!("{}\n{CHECK}\n{}", &html[..at], &html[at..])).expect("write");
    copy
}

/// The check's result for `page`, and the console messages of the page
/// as written (with its policy, without the script).
fn check(page: &Path, work: &Path) -> (Value, Vec<String>) {
    let (_, stderr) = browser::run(page, work, &["--dump-dom".to_string()]);
    let console = browser::console_messages(&stderr);
    let copy = instrumented(page);
    let (dom, _) = browser::run(
        &copy,
        work,
        &[
            "--dump-dom".to_string(),
            "--virtual-time-budget=5000".to_string(),
        ],
    );
    let start = dom
        .find("<pre id=\"render-check\">")
        .unwrap_or_else(|| panic!("the check did not run on {}:\n{dom}", page.display()));
    let rest = &dom[start + "<pre id=\"render-check\">".len()..];
    let json = rest[..rest.find("</pre>").expect("pre closes")]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    (serde_json::from_str(&json).expect("check JSON"), console)
}

fn assert_renders(page: &Path, work: &Path, min_charts: u64) {
    let (r, console) = check(page, work);
    let name = page.display();
    assert!(console.is_empty(), "{name}: console messages: {console:#?}");
    assert_eq!(r["errors"], serde_json::json!([]), "{name}: {r}");
    assert!(r["svgs"].as_u64().unwrap() >= min_charts, "{name}: {r}");
    assert_eq!(
        r["empty_svgs"],
        serde_json::json!([]),
        "{name}: charts not drawn: {r}"
    );
    assert_eq!(
        r["overflow"],
        serde_json::json!([]),
        "{name}: text cut at a chart's edge: {r}"
    );
    assert!(
        r["markers"].as_u64().unwrap() > 0,
        "{name}: no markers: {r}"
    );
    assert_eq!(
        r["untitled_markers"], 0,
        "{name}: markers without tooltip: {r}"
    );
    assert_eq!(r["broken_imgs"], serde_json::json!([]), "{name}: {r}");
    assert_eq!(
        r["findings_first"], true,
        "{name}: Findings is not first: {r}"
    );
}

fn workdir(name: &str) -> PathBuf {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("mkdir");
    work
}

#[test]
fn sweep_report_renders_in_chromium() {
    let work = workdir("browser-sweep");
    let dir = work.join("results");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/fixtures/report-sweep");
    for f in ["raw.csv", "machine.json"] {
        std::fs::copy(fixture.join(f), dir.join(f)).expect("copy fixture");
    }
    assert_ok(
        &loadlab(&["report", dir.to_str().unwrap()]),
        "loadlab report",
    );
    let index = dir.join("index.html");
    assert_renders(&index, &work, 5);
    browser::screenshot(&index, &work, "sweep.png");
}

#[test]
fn stress_report_renders_in_chromium() {
    let work = workdir("browser-stress");
    let dir = work.join("stress");
    // model subset: one thread pool and one process pool, E2's pair.
    let out = loadlab(&[
        "stress",
        "--ops",
        "upload,download",
        "--sizes",
        "64K,256K",
        "--clients",
        "1,4",
        "--server-workers",
        "1,2",
        "--models",
        "thread-pool,prefork", // model subset: E2's pair, as above.
        "--out",
        dir.to_str().unwrap(),
        "--scratch",
        work.to_str().unwrap(),
    ]);
    assert_ok(&out, "loadlab stress");
    let index = dir.join("index.html");
    let written = std::fs::read(&index).expect("loadlab stress writes index.html");
    // `loadlab report` renders a stress directory to the same page.
    assert_ok(
        &loadlab(&["report", dir.to_str().unwrap()]),
        "loadlab report",
    );
    assert_eq!(
        std::fs::read(&index).unwrap(),
        written,
        "re-rendered page differs"
    );
    let html = String::from_utf8_lossy(&written);
    assert!(html.contains("upload 64K: throughput per client vs clients"));
    assert!(html.contains("loadlab stress --ops upload,download --sizes 64K,256K --clients 1,4"));
    assert_renders(&index, &work, 4);
    browser::screenshot(&index, &work, "stress.png");

    // stress.csv alone is enough to draw the page.
    let csv_only = work.join("csv-only");
    std::fs::create_dir_all(&csv_only).unwrap();
    std::fs::copy(dir.join("stress.csv"), csv_only.join("stress.csv")).unwrap();
    assert_ok(
        &loadlab(&["report", csv_only.to_str().unwrap()]),
        "loadlab report",
    );
    assert!(std::fs::read_to_string(csv_only.join("index.html"))
        .unwrap()
        .contains("id=\"findings\""));
}

/// The check itself: a page with a script error, an image that does not
/// load, a label running out of its chart and no Findings fails each part.
#[test]
fn the_render_check_catches_a_broken_page() {
    let work = workdir("browser-broken");
    let page = work.join("broken.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body><h1>x</h1><p>no findings</p>\
         <img src=\"missing.png\">\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\" height=\"50\" viewBox=\"0 0 100 50\">\
         <circle class=\"marker\" cx=\"10\" cy=\"10\" r=\"4\"/>\
         <text x=\"60\" y=\"30\" font-size=\"14\">a label far too long for this chart</text></svg>\
         <script>console.error('boom'); notAFunction();</script></body></html>",
    )
    .unwrap();
    let (r, console) = check(&page, &work);
    assert!(console.iter().any(|l| l.contains("boom")), "{console:?}");
    assert_eq!(r["broken_imgs"].as_array().unwrap().len(), 1, "{r}");
    assert!(
        r["overflow"][0].as_str().unwrap().starts_with("a label"),
        "{r}"
    );
    assert_eq!(r["untitled_markers"], 1, "{r}");
    assert_eq!(r["findings_first"], false, "{r}");
    assert!(!r["errors"].as_array().unwrap().is_empty(), "{r}");
}
