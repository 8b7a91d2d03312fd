//! The two human-readable documents: summary.md and index.html. Both open
//! with the Targets (what the check before the runs found, when it ran)
//! and the Findings, then each experiment with its question, the command
//! that reproduces it and how to read it, then the same tables in the same
//! order; the page also embeds the charts inline and folds long tables
//! into `<details>`. The page is self-contained: inline CSS, inline SVG,
//! no script, and a Content-Security-Policy that forbids loading anything.
//! The stress page reuses its head, findings and chart pieces.

use super::charts::Chart;
use super::e1;
use super::explain::{self, Intro};
use super::findings::why::Why;
use super::summary::SweepSummary;
use super::sweep_tables;
use super::table::{esc, Table};
use super::targets;
use crate::results::diagnosis::Diagnosis;
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
            let mut details: Vec<Table> = super::slow::table(s, exp).into_iter().collect();
            details.extend(sweep_tables::windows(s, exp));
            details.extend(super::work::table(s, exp));
            details.extend(super::kernel::table(s, exp));
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

/// Tables longer than this go in a `<details>` element, closed: a reader
/// opens the connection times when wanted, not by scrolling past them.
pub const LONG_TABLE: usize = 20;

/// The Findings section of summary.md.
pub fn findings_markdown(findings: &[String]) -> String {
    let mut o = String::from("## Findings\n\n");
    if findings.is_empty() {
        o.push_str("No findings.\n\n");
    }
    for f in findings {
        o.push_str(&format!("- {f}\n"));
    }
    if !findings.is_empty() {
        o.push('\n');
    }
    o
}

/// An experiment's opening in Markdown: question, command, how to read,
/// the models.
pub fn intro_markdown(i: &Intro) -> String {
    let mut o = format!("**Question.** {}\n\n", i.question);
    match &i.command {
        Some(c) => o.push_str(&format!("**Reproduce with:**\n\n```sh\n{c}\n```\n\n")),
        None => o.push_str(&format!("**Reproduce with:** {NO_COMMAND}\n\n")),
    }
    o.push_str(&format!("**How to read it.** {}\n\n", i.how_to_read));
    for (name, about) in &i.models {
        o.push_str(&format!("- **{name}**: {about}\n"));
    }
    if !i.models.is_empty() {
        o.push('\n');
    }
    o
}

/// What summary.md and index.html are drawn from.
#[derive(Clone, Copy)]
pub struct Doc<'a> {
    pub raw: &'a [RawRow],
    pub machine: Option<&'a Machine>,
    pub summary: &'a SweepSummary,
    pub charts: &'a [Chart],
    pub findings: &'a [String],
    /// The command that reproduces the sweep, when recorded.
    pub command: Option<&'a str>,
    /// What the check before the runs found of each target.
    pub checked: &'a [Diagnosis],
    /// How the CPUs were split between targets and load generator, from
    /// sweep.json's notes; None without sweep.json.
    pub split: Option<&'a str>,
    /// The capacity table, when the sweep searched capacities.
    pub capacity: Option<&'a Table>,
    /// The charts that answer, shown with it: latency against offered
    /// rate, capacity, server CPU per request at equal load.
    pub answer_charts: &'a [Chart],
    /// This sweep against an earlier run (`--compare-to`).
    pub compared: Option<&'a Table>,
    /// Why each target costs what it does (empty when nothing was counted).
    pub why: &'a [Why],
}

const NO_COMMAND: &str = "the command was not recorded (no sweep.json in this directory).";

pub fn markdown(d: &Doc) -> String {
    let Doc {
        raw,
        machine: m,
        summary: s,
        charts,
        findings,
        command,
        checked,
        split,
        capacity,
        answer_charts,
        compared,
        why,
    } = *d;
    let mut o = String::from("# loadlab report\n\n");
    o.push_str(&findings_markdown(findings));
    o.push_str(&targets::markdown(checked));
    o.push_str(&format!("{}\n\n", counts(raw)));
    if let Some(split) = split {
        o.push_str(&format!("{split}\n\n"));
    }
    if let Some(t) = capacity {
        o.push_str(&t.to_markdown(2));
    }
    for c in answer_charts {
        o.push_str(&format!("![{}](charts/{})\n\n", c.title, c.file));
    }
    if let Some(t) = compared {
        o.push_str(&t.to_markdown(2));
    }
    o.push_str(&why_markdown(why));
    o.push_str(&sweep_tables::machine(m).to_markdown(2));
    if let Some(t) = sweep_tables::skipped_targets(&s.skipped) {
        o.push_str(&t.to_markdown(2));
    }
    for sec in sections(s, charts) {
        o.push_str(&format!("## Experiment {}\n\n", sec.name));
        o.push_str(&intro_markdown(&intro_of(s, sec.name, command)));
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

/// The intro of one experiment of the sweep, over the targets it measured.
fn intro_of(s: &SweepSummary, exp: &str, command: Option<&str>) -> Intro {
    let targets = s
        .groups
        .iter()
        .map(|g| &g.key)
        .filter(|k| k.experiment == exp)
        .map(|k| k.target.as_str());
    explain::intro(exp, command, targets)
}

pub const CSS: &str = "\
body{font-family:sans-serif;margin:1.5em;color:#222;background:#fff;max-width:1800px;line-height:1.4}\
h1{font-size:1.6em}h2{font-size:1.3em;margin-top:1.6em;border-bottom:1px solid #ccc}\
h3{font-size:1.05em;margin-bottom:.3em}\
p.note{margin:.2em 0 .5em;color:#555;font-size:.9em}\
p.intro{max-width:60em}\
section#findings{background:#f6f8fa;border:1px solid #d0d7de;padding:.2em 1em .6em}\
section#findings li{margin:.25em 0;max-width:70em}\
pre.command{background:#f6f8fa;border:1px solid #ddd;padding:.5em;overflow-x:auto;white-space:pre-wrap}\
dl.models dt{font-weight:bold}dl.models dd{margin:0 0 .5em 1.5em;max-width:60em}\
details{margin:.5em 0 1em}details summary{cursor:pointer;font-weight:bold}\
div.scroll{overflow-x:auto}\
table{border-collapse:collapse;font-size:.85em;margin-bottom:1em}\
th,td{border:1px solid #ddd;padding:.25em .5em;white-space:nowrap}\
th{background:#f2f2f2;text-align:left}\
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}\
tbody tr:nth-child(even){background:#fafafa}\
div.charts{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}\
figure{margin:0;border:1px solid #ddd;max-width:100%}\
figure svg{display:block;max-width:100%;height:auto}\
";

/// The document head: a Content-Security-Policy that forbids loading
/// anything, and the inline style.
pub fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(title)
    )
}

/// The Findings section, first on every page.
pub fn findings_html(findings: &[String]) -> String {
    let mut o = String::from("<section id=\"findings\">\n<h2>Findings</h2>\n");
    if findings.is_empty() {
        o.push_str("<p>No findings.</p>\n");
    } else {
        o.push_str("<ul>\n");
        for f in findings {
            o.push_str(&format!("<li>{}</li>\n", esc(f)));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</section>\n");
    o
}

/// An experiment's opening: question, command, how to read, the models.
pub fn intro_html(i: &Intro) -> String {
    let mut o = format!(
        "<p class=\"intro question\"><b>Question.</b> {}</p>\n",
        esc(&i.question)
    );
    match &i.command {
        Some(c) => o.push_str(&format!(
            "<p class=\"intro\"><b>Reproduce with:</b></p>\n<pre class=\"command\">{}</pre>\n",
            esc(c)
        )),
        None => o.push_str(&format!(
            "<p class=\"intro\"><b>Reproduce with:</b> {}</p>\n",
            esc(NO_COMMAND)
        )),
    }
    o.push_str(&format!(
        "<p class=\"intro\"><b>How to read it.</b> {}</p>\n",
        esc(&i.how_to_read)
    ));
    if !i.models.is_empty() {
        o.push_str("<dl class=\"models\">\n");
        for (name, about) in &i.models {
            o.push_str(&format!("<dt>{}</dt><dd>{}</dd>\n", esc(name), esc(about)));
        }
        o.push_str("</dl>\n");
    }
    o
}

/// A table, folded into `<details>` when it is long.
pub fn table_html(t: &Table, level: usize) -> String {
    if t.rows.len() <= LONG_TABLE {
        return t.to_html(level);
    }
    format!(
        "<details>\n<summary>{} ({} rows)</summary>\n{}</details>\n",
        esc(&t.title),
        t.rows.len(),
        t.to_html(level)
    )
}

/// Charts inline, each in a figure with an id.
pub fn charts_html(charts: &[&Chart]) -> String {
    if charts.is_empty() {
        return String::new();
    }
    let mut o = String::from("<div class=\"charts\">\n");
    for c in charts {
        o.push_str(&format!(
            "<figure id=\"chart-{}\">\n{}</figure>\n",
            esc(c.file.trim_end_matches(".svg")),
            inline_svg(&c.svg, &c.title)
        ));
    }
    o.push_str("</div>\n");
    o
}

pub fn html(d: &Doc) -> String {
    let Doc {
        raw,
        machine: m,
        summary: s,
        charts,
        findings,
        command,
        checked,
        split,
        capacity,
        answer_charts,
        compared,
        why,
    } = *d;
    let mut o = head("loadlab report");
    o.push_str("<h1>loadlab report</h1>\n");
    o.push_str(&findings_html(findings));
    o.push_str(&targets::html(checked));
    o.push_str(&format!("<p>{}</p>\n", esc(&counts(raw))));
    if let Some(split) = split {
        o.push_str(&format!("<p>{}</p>\n", esc(split)));
    }
    if let Some(t) = capacity {
        o.push_str(&table_html(t, 2));
    }
    if !answer_charts.is_empty() {
        o.push_str(&charts_html(&answer_charts.iter().collect::<Vec<_>>()));
    }
    if let Some(t) = compared {
        o.push_str(&table_html(t, 2));
    }
    o.push_str(&why_html(why));
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
        o.push_str(&intro_html(&intro_of(s, sec.name, command)));
        if sec.summary.is_none() {
            o.push_str("<p>No measured runs.</p>\n");
        }
        o.push_str(&charts_html(&sec.charts));
        for t in sec.summary.iter().chain(&sec.details) {
            o.push_str(&table_html(t, 3));
        }
        o.push_str("</section>\n");
    }
    o.push_str(&table_html(&sweep_tables::failed_runs(&s.failed), 2));
    o.push_str("</body>\n</html>\n");
    o
}

/// What the Why section says before its targets.
const WHY_LEAD: &str = "What each request cost each server, and in what work: syscalls and \
context switches counted by perf in a short unmeasured pass of each cell, run-queue wait and \
the kernel's share of the CPU over the measured runs, beside the cheapest target at the same \
setting. The cost ranking in the findings carries the intervals.";

/// The Why section of summary.md; nothing when no target was counted.
fn why_markdown(why: &[Why]) -> String {
    if why.is_empty() {
        return String::new();
    }
    let mut o = format!("## Why\n\n{WHY_LEAD}\n\n");
    for y in why {
        o.push_str(&format!("### {}\n\n", y.target));
        if let Some(a) = &y.about {
            o.push_str(&format!("{a}\n\n"));
        }
        for l in &y.lines {
            o.push_str(&format!("- {l}\n"));
        }
        o.push('\n');
        if let Some(t) = y.profile_text() {
            o.push_str(&format!("{t}\n\n"));
        }
        if let Some(p) = &y.profile {
            o.push_str(&format!(
                "![Flame graph of {}](profiles/{})\n\n",
                y.target, p.flame_graph
            ));
        }
    }
    o
}

/// The Why section of the page.
fn why_html(why: &[Why]) -> String {
    if why.is_empty() {
        return String::new();
    }
    let mut o = format!(
        "<section id=\"why\">\n<h2>Why</h2>\n<p>{}</p>\n",
        esc(WHY_LEAD)
    );
    for y in why {
        o.push_str(&format!("<h3>{}</h3>\n", esc(&y.target)));
        if let Some(a) = &y.about {
            o.push_str(&format!("<p>{}</p>\n", esc(a)));
        }
        o.push_str("<ul>\n");
        for l in &y.lines {
            o.push_str(&format!("<li>{}</li>\n", esc(l)));
        }
        o.push_str("</ul>\n");
        if let Some(t) = y.profile_text() {
            o.push_str(&format!("<p>{}</p>\n", esc(&t)));
        }
        if let Some(svg) = &y.flame_svg {
            let clean = crate::sys::stacks::without_scripts(svg);
            let title = format!("Flame graph of {}", y.target);
            o.push_str(&format!(
                "<figure class=\"flame\">{}</figure>\n",
                inline_svg(&clean, &title)
            ));
        }
    }
    o.push_str("</section>\n");
    o
}

/// The chart's SVG ready to sit in the page: any XML prolog dropped (not
/// allowed inside HTML) and the image named for screen readers.
pub fn inline_svg(svg: &str, title: &str) -> String {
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
