//! The outputs besides the terminal's: Markdown for a pull request, JSON
//! held to docs/schema/compare-v1.schema.json, and an HTML page with both
//! runs' curves, written whole and without scripts.

use super::support::*;
use crate::common;

#[test]
fn markdown_json_and_html_describe_the_same_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for out in [&a, &b] {
        sweep(
            &[
                "-T",
                "model:event-loop",
                "--concurrency",
                "1,4",
                "--requests",
                "1000",
                "--repeat",
                "2",
            ],
            out,
        );
    }
    let (a, b) = (a.display().to_string(), b.display().to_string());
    let doc = compare_json(&[&a, &b]);
    let errs = common::schema::validate("compare-v1.schema.json", &doc);
    assert!(errs.is_empty(), "{errs:#?}");
    assert_eq!(doc["schema"], "loadlab.compare/1");
    let mut broken = doc.clone();
    broken["cells"][0]["metrics"][0]["verdict"] = "faster".into();
    assert!(!common::schema::validate("compare-v1.schema.json", &broken).is_empty());

    let (md, _, code) = compare(&[&a, &b, "--format", "markdown"]);
    assert_eq!(code, 0);
    assert!(md.starts_with("## loadlab compare\n\n- A: "), "{md}");
    assert!(
        md.contains("| target | cell | metric | A | B | B/A [95 %] |"),
        "{md}"
    );

    let page = dir.path().join("cmp.html");
    let (_, err, code) = compare(&[&a, &b, "--html", page.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<svg") && html.contains("A (solid) and B (dashed)"),
        "{html}"
    );
    assert!(!html.contains("<script"), "no scripts");
    assert!(html.contains("default-src 'none'"));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "no temporary file left: {names:?}");
}
