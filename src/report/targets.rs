//! The Targets section that opens a sweep's report: what the check before
//! the runs found of each target, its failures and warnings with their
//! evidence and fix, every check's evidence folded.

use super::table::esc;
use crate::results::diagnosis::{CheckLine, Diagnosis};

const INTRO: &str = "Each target's framing and connections were checked before its first run \
(`loadlab check --quick`; docs/guide/check.md says what each check means). \
A defect found here may explain its numbers below.";

/// The fix to show beside a check: none for a skipped one, which found
/// nothing to fix.
fn fix_of(c: &CheckLine) -> Option<&str> {
    (c.verdict != "skip").then_some(c.fix.as_str())
}

/// The section in summary.md; empty when the sweep checked nothing.
pub fn markdown(targets: &[Diagnosis]) -> String {
    if targets.is_empty() {
        return String::new();
    }
    let mut o = format!("## Targets\n\n{INTRO}\n\n");
    for d in targets {
        o.push_str(&format!(
            "- **{}**: {} ({:.2} s)\n",
            d.target,
            d.headline(),
            d.seconds
        ));
        for c in d.checks.iter().filter(|c| c.verdict != "pass") {
            let fix = fix_of(c).map_or(String::new(), |f| format!(" Fix: {f}."));
            o.push_str(&format!(
                "  - {} `{}`: {}.{fix}\n",
                c.verdict, c.id, c.evidence
            ));
        }
    }
    o.push('\n');
    o
}

/// The section in index.html; empty when the sweep checked nothing.
pub fn html(targets: &[Diagnosis]) -> String {
    if targets.is_empty() {
        return String::new();
    }
    let mut o = format!(
        "<section id=\"targets\">\n<h2>Targets</h2>\n<p class=\"note\">{}</p>\n<ul>\n",
        esc(INTRO)
    );
    for d in targets {
        o.push_str(&format!(
            "<li><b>{}</b>: {} ({:.2} s)",
            esc(&d.target),
            esc(&d.headline()),
            d.seconds
        ));
        let bad: Vec<_> = d.checks.iter().filter(|c| c.verdict != "pass").collect();
        if !bad.is_empty() {
            o.push_str("\n<ul>\n");
            for c in bad {
                let fix = fix_of(c).map_or(String::new(), |f| format!(" <b>Fix:</b> {}.", esc(f)));
                o.push_str(&format!(
                    "<li>{} <code>{}</code>: {}.{fix}</li>\n",
                    esc(&c.verdict),
                    esc(&c.id),
                    esc(&c.evidence)
                ));
            }
            o.push_str("</ul>\n");
        }
        if !d.checks.is_empty() {
            o.push_str(&format!(
                "<details><summary>Every check of {} ({})</summary>\n<table>\n<tr><th>check</th><th>verdict</th><th>evidence</th></tr>\n",
                esc(&d.target),
                d.checks.len()
            ));
            for c in &d.checks {
                o.push_str(&format!(
                    "<tr><td>{}</td><td>{}</td><td style=\"white-space:normal\">{}</td></tr>\n",
                    esc(&c.id),
                    esc(&c.verdict),
                    esc(&c.evidence)
                ));
            }
            o.push_str("</table>\n</details>\n");
        }
        o.push_str("</li>\n");
    }
    o.push_str("</ul>\n</section>\n");
    o
}
