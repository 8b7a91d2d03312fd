//! The HTML page in headless Chromium: it renders its charts and tables and
//! not a single request leaves it.

use std::path::{Path, PathBuf};

use crate::common;
use serde_json::Value;

use super::support::{assert_ok, expected_charts, report, results_dir, table_rows};

/// Headless Chromium on `page` with its net log in `net_log`; returns the
/// DOM with `--dump-dom`.
fn run_chromium(page: &Path, work: &Path, net_log: &Path, extra: &[String]) -> String {
    let mut args = vec![format!("--log-net-log={}", net_log.display())];
    args.extend(extra.iter().cloned());
    common::browser::run(page, work, &args).0
}

/// URLs the page itself asked for over the network, from Chromium's net
/// log. The browser's own background requests (update checks, network
/// time) have no page initiator ("not an origin") and are not the page's
/// doing; requests a file:// page makes carry the opaque initiator "null"
/// and a file:// isolation key. Any non-file URL a page request names is
/// returned.
fn page_requests(net_log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(net_log).expect("net log written");
    // Chromium may leave the final `]}` off when it exits at once.
    let log: Value = serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", text.trim_end().trim_end_matches(','))))
        .expect("net log is JSON");
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .expect("URL_REQUEST_START_JOB in net log constants");
    let mut urls = Vec::new();
    for e in log["events"].as_array().expect("net log events") {
        if e["type"].as_u64() != Some(start_job) {
            continue;
        }
        let p = &e["params"];
        // The job's end event carries only its result, not the URL.
        let Some(url) = p["url"].as_str() else {
            continue;
        };
        let from_browser = p["initiator"] == "not an origin"
            && !p["network_isolation_key"]
                .as_str()
                .unwrap_or_default()
                .contains("file://");
        if !url.starts_with("file:") && !from_browser {
            urls.push(url.to_string());
        }
    }
    urls
}

/// The `<svg>...</svg>` texts of the charts in a DOM dump, with the id of
/// the figure holding each.
fn charts_in(dom: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(i) = rest.find("<figure id=\"") {
        rest = &rest[i + 12..];
        let id = rest[..rest.find('"').expect("id ends")].to_string();
        let end = rest.find("</figure>").expect("figure closes");
        out.push((id, rest[..end].to_string()));
        rest = &rest[end..];
    }
    out
}

/// The point counts of a chart's series lines: the polylines of class
/// `series` (grid and legend samples are other elements).
fn series_lines(svg: &str) -> Vec<usize> {
    svg.split("<polyline")
        .skip(1)
        .filter_map(|el| {
            let el = &el[..el.find('>').unwrap_or(el.len())];
            let points = el.split("points=\"").nth(1)?.split('"').next()?;
            el.contains("class=\"series\"")
                .then(|| points.split_whitespace().count())
        })
        .collect()
}

#[test]
fn html_report_renders_in_headless_chromium_without_network() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-chromium");
    let _ = std::fs::remove_dir_all(&work);
    let dir = work.join("results");
    std::fs::create_dir_all(&dir).expect("mkdir");
    results_dir(&dir);
    assert_ok(&report(&dir));
    let index = dir.join("index.html");

    // The DOM as Chromium parsed it: tables and charts are there.
    let net_log = work.join("net-index.json");
    let dom = run_chromium(&index, &work, &net_log, &["--dump-dom".to_string()]);
    for id in [
        "machine",
        "summary-e1",
        "e1-main",
        "e1-connection-times",
        "e1-percentiles",
        "summary-e3",
        "summary-e4",
        "windows-e4",
        "summary-e5",
        "failed-runs",
        "skipped-targets",
    ] {
        assert!(
            table_rows(&dom, id) > 0,
            "table {id} missing in the rendered DOM"
        );
    }
    assert!(dom.contains("target did not start"), "failed run not shown");
    let charts = charts_in(&dom);
    assert_eq!(
        charts.len(),
        expected_charts().len(),
        "every chart is embedded"
    );
    for (id, svg) in &charts {
        assert!(svg.contains("<svg"), "{id}: no inline svg");
        // Lines join good cells only; the made-up data gives most cells
        // failed or non-2xx requests, so those are hollow markers instead.
        let lines = series_lines(svg);
        let hollow = svg.matches("fill=\"#fff\" stroke=").count();
        assert!(
            lines.iter().all(|n| *n >= 2) && (!lines.is_empty() || hollow > 0),
            "{id}: neither a line nor a hollow marker"
        );
        assert!(
            svg.contains("class=\"marker\""),
            "{id}: no data points drawn"
        );
        assert!(svg.contains("<title>"), "{id}: no tooltips");
        assert!(svg.contains("<text"), "{id}: no title, axis or legend text");
    }
    assert!(
        page_requests(&net_log).is_empty(),
        "the report made network requests: {:?}",
        page_requests(&net_log)
    );

    // The same page without its Content-Security-Policy, so it is the
    // content itself, not the policy, that asks for nothing.
    let html = std::fs::read_to_string(&index).expect("index.html");
    let open = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .expect("CSP meta");
    let close = open + html[open..].find('>').expect("meta ends") + 1;
    let bare = dir.join("index-no-csp.html");
    std::fs::write(&bare, format!("{}{}", &html[..open], &html[close..])).expect("write");
    let bare_log = work.join("net-no-csp.json");
    run_chromium(&bare, &work, &bare_log, &["--dump-dom".to_string()]);
    assert_eq!(page_requests(&bare_log), Vec::<String>::new());

    // The check itself works: a page that does load from the network is
    // caught (its requests go to the refusing proxy, never out).
    let leaky = work.join("leaky.html");
    std::fs::write(
        &leaky,
        "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/x.png\">\
         <img src=\"https://example.invalid/y.png\"></body></html>",
    )
    .expect("write");
    let leaky_log = work.join("net-leaky.json");
    run_chromium(&leaky, &work, &leaky_log, &["--dump-dom".to_string()]);
    let caught = page_requests(&leaky_log);
    assert!(
        caught.iter().any(|u| u.starts_with("http://127.0.0.1:9/"))
            && caught
                .iter()
                .any(|u| u.starts_with("https://example.invalid/")),
        "net log check missed the leaky page's requests: {caught:?}"
    );

    // A screenshot, kept under the target dir for a look.
    common::browser::screenshot(&index, &work, "report.png");
}
