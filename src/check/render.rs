//! A check's report as people read it (one line per check, with the rule,
//! what clients do and the fix under each warn and fail) and as scripts
//! read it (JSON, docs/schema/check-v1.schema.json).

use std::fmt::Write;

use serde::Serialize;

use super::catalogue::Family;
use super::outcome::{CheckReport, Tally, Verdict};

/// The JSON document's schema id.
pub const SCHEMA_ID: &str = "loadlab.check/v1";

/// The text report.
pub fn text(r: &CheckReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "loadlab check {} ({})", r.target, r.url);
    let mut family: Option<Family> = None;
    for f in &r.findings {
        if family != Some(f.defect.family) {
            family = Some(f.defect.family);
            let _ = writeln!(out, "{}", f.defect.family.name());
        }
        let _ = writeln!(
            out,
            "  {:<5} {:<29} {}",
            f.verdict.word(),
            f.defect.id,
            f.evidence
        );
        if let Some(note) = &f.note {
            let _ = writeln!(out, "        note:    {note}");
        }
        if matches!(f.verdict, Verdict::Fail | Verdict::Warn) {
            let _ = writeln!(out, "        rule:    {}", f.defect.rule);
            let _ = writeln!(out, "        clients: {}", f.defect.clients);
            let _ = writeln!(out, "        fix:     {}", f.defect.fix);
        }
    }
    if let Some(why) = &r.unusable {
        let _ = writeln!(out, "{why}");
    }
    let t = r.tally();
    let _ = writeln!(
        out,
        "{} check{} in {:.1} s: {} pass, {} warn, {} fail, {} skip{}",
        r.findings.len(),
        if r.findings.len() == 1 { "" } else { "s" },
        r.elapsed.as_secs_f64(),
        t.pass,
        t.warn,
        t.fail,
        t.skip,
        if r.interrupted { " (interrupted)" } else { "" }
    );
    out
}

#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    target: &'a str,
    url: &'a str,
    seconds: f64,
    unusable: Option<&'a str>,
    interrupted: bool,
    tally: Tally,
    checks: Vec<Check<'a>>,
}

#[derive(Serialize)]
struct Check<'a> {
    id: &'static str,
    family: Family,
    verdict: Verdict,
    evidence: &'a str,
    note: Option<&'a str>,
    rule: &'static str,
    clients: &'static str,
    fix: &'static str,
}

/// The JSON report.
pub fn json(r: &CheckReport) -> String {
    let doc = Doc {
        schema: SCHEMA_ID,
        target: &r.target,
        url: &r.url,
        seconds: (r.elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
        unusable: r.unusable.as_deref(),
        interrupted: r.interrupted,
        tally: r.tally(),
        checks: r
            .findings
            .iter()
            .map(|f| Check {
                id: f.defect.id,
                family: f.defect.family,
                verdict: f.verdict,
                evidence: &f.evidence,
                note: f.note.as_deref(),
                rule: f.defect.rule,
                clients: f.defect.clients,
                fix: f.defect.fix,
            })
            .collect(),
    };
    serde_json::to_string_pretty(&doc).expect("a check report serializes") + "\n"
}
