//! The two human-readable documents: summary.md and index.html. Both lay
//! out the same tables in the same order; the page also embeds the charts
//! inline. The page is self-contained: inline CSS, inline SVG, and a
//! Content-Security-Policy that forbids loading anything at all.

use super::charts::Chart;
use super::e1;
use super::summary::SweepSummary;
use super::sweep_tables;
use super::table::{esc, Table};
use crate::results::raw::{Machine, RawRow};

/// One experiment's part of the report: its charts first (the answer at a
/// glance), then its summary table, then the detail tables (repeat
/// windows, E1's ab tables).
struct Section<'a> {
    name: &'a str,
    summary: Option<Table>,
    charts: Vec<&'a Chart>,
    details: Vec<Table>,
}

fn sections<'a>(s: &'a SweepSummary, charts: &'a [Chart]) -> Vec<Section<'a>> {
    s.experiments
        .iter()
        .map(|exp| {
            let mut details: Vec<Table> = sweep_tables::windows(s, exp).into_iter().collect();
            if e1::applies(exp) {
                details.extend(e1::tables(s, exp));
            }
            Section {
                name: exp,
                summary: sweep_tables::experiment_summary(s, exp),
                charts: charts.iter().filter(|c| c.experiment == *exp).collect(),
                details,
            }
        })
        .collect()
}

/// "12 runs: 9 measured, 2 warm-up, 1 failed." Rows that record a
/// skipped target are not runs and are counted apart.
fn counts(raw: &[RawRow]) -> String {
    let skipped = raw.iter().filter(|r| r.is_skip()).count();
    let failed = raw.iter().filter(|r| r.is_failed()).count();
    let warm = raw.iter().filter(|r| r.is_measured() && r.warmup).count();
    let runs = raw.len() - skipped;
    let measured = runs - failed - warm;
    let mut text =
        format!("raw.csv holds {runs} runs: {measured} measured, {warm} warm-up, {failed} failed.");
    if skipped > 0 {
        text.push_str(" Some targets were skipped: see Skipped targets.");
    }
    text
}

pub fn markdown(raw: &[RawRow], m: Option<&Machine>, s: &SweepSummary, charts: &[Chart]) -> String {
    let mut o = String::from("# loadlab report\n\n");
    o.push_str(&format!("{}\n\n", counts(raw)));
    o.push_str(&sweep_tables::machine(m).to_markdown(2));
    if let Some(t) = sweep_tables::skipped_targets(&s.skipped) {
        o.push_str(&t.to_markdown(2));
    }
    for sec in sections(s, charts) {
        o.push_str(&format!("## Experiment {}\n\n", sec.name));
        if sec.summary.is_none() {
            o.push_str("No measured runs.\n\n");
        }
        for c in &sec.charts {
            o.push_str(&format!("![{}](charts/{})\n\n", c.title, c.file));
        }
        for t in sec.summary.iter().chain(&sec.details) {
            o.push_str(&t.to_markdown(3));
        }
    }
    o.push_str(&sweep_tables::failed_runs(&s.failed).to_markdown(2));
    o
}

const CSS: &str = "\
body{font-family:sans-serif;margin:1.5em;color:#222;background:#fff;max-width:1800px}\
h1{font-size:1.6em}h2{font-size:1.3em;margin-top:1.6em;border-bottom:1px solid #ccc}\
h3{font-size:1.05em;margin-bottom:.3em}\
p.note{margin:.2em 0 .5em;color:#555;font-size:.9em}\
div.scroll{overflow-x:auto}\
table{border-collapse:collapse;font-size:.85em;margin-bottom:1em}\
th,td{border:1px solid #ddd;padding:.25em .5em;white-space:nowrap}\
th{background:#f2f2f2;text-align:left}\
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}\
tbody tr:nth-child(even){background:#fafafa}\
div.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,560px),1fr));gap:1em;max-width:1720px}\
figure{margin:0;border:1px solid #ddd}\
figure svg{display:block;width:100%;height:auto}\
";

pub fn html(raw: &[RawRow], m: Option<&Machine>, s: &SweepSummary, charts: &[Chart]) -> String {
    let mut o = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>loadlab report</title>\n",
    );
    o.push_str(&format!("<style>{CSS}</style>\n</head>\n<body>\n"));
    o.push_str("<h1>loadlab report</h1>\n");
    o.push_str(&format!("<p>{}</p>\n", esc(&counts(raw))));
    o.push_str(&sweep_tables::machine(m).to_html(2));
    if let Some(t) = sweep_tables::skipped_targets(&s.skipped) {
        o.push_str(&t.to_html(2));
    }
    for sec in sections(s, charts) {
        o.push_str(&format!(
            "<section id=\"experiment-{}\">\n<h2>Experiment {}</h2>\n",
            esc(&sweep_tables::slug(sec.name)),
            esc(sec.name)
        ));
        if sec.summary.is_none() {
            o.push_str("<p>No measured runs.</p>\n");
        }
        if !sec.charts.is_empty() {
            o.push_str("<div class=\"charts\">\n");
            for c in &sec.charts {
                o.push_str(&format!(
                    "<figure id=\"chart-{}\">\n{}</figure>\n",
                    esc(c.file.trim_end_matches(".svg")),
                    inline_svg(&c.svg, &c.title)
                ));
            }
            o.push_str("</div>\n");
        }
        for t in sec.summary.iter().chain(&sec.details) {
            o.push_str(&t.to_html(3));
        }
        o.push_str("</section>\n");
    }
    o.push_str(&sweep_tables::failed_runs(&s.failed).to_html(2));
    o.push_str("</body>\n</html>\n");
    o
}

/// The chart's SVG ready to sit in the page: any XML prolog dropped (not
/// allowed inside HTML) and the image named for screen readers.
fn inline_svg(svg: &str, title: &str) -> String {
    let body = match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    };
    let mut s = body.replacen(
        "<svg",
        &format!("<svg role=\"img\" aria-label=\"{}\"", esc(title)),
        1,
    );
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s
}
