//! The check a sweep makes of each target before its first measured run:
//! the framing and connection families only, briefly, so a defect that
//! changes how answers count is known before the numbers are read.

use std::time::Duration;

use crate::check::probe::Probe;
use crate::check::{self, Options, Target};
use crate::net::url::HttpUrl;
use crate::proc::target::Running;
use crate::results::diagnosis::{CheckLine, Diagnosis};

/// The whole pre-check of one target (its waits are short; a broken
/// target stops being checked here).
const PRE_CHECK_LIMIT: Duration = Duration::from_secs(1);

/// Checks one started target at `path`, labelled `label`.
pub fn diagnose(
    label: &str,
    running: &Running,
    path: &str,
    stop: &(dyn Fn() -> bool + Sync),
) -> Diagnosis {
    diagnose_at(label, &running.base, running.pid, path, stop)
}

/// Checks the server at `base` (`http://host:port`), whose process is
/// `pid` when known, at `path`: what a stress run does before its cells.
pub fn diagnose_at(
    label: &str,
    base: &str,
    pid: Option<u32>,
    path: &str,
    stop: &(dyn Fn() -> bool + Sync),
) -> Diagnosis {
    let url = match HttpUrl::parse(base) {
        Ok(u) => u,
        Err(e) => {
            return Diagnosis {
                target: label.to_string(),
                unusable: Some(e.to_string()),
                ..Diagnosis::default()
            }
        }
    };
    // Malformed and bursty probes go only to loopback, and check speaks
    // plain HTTP.
    if url.tls || !url.addr.ip().is_loopback() {
        return Diagnosis {
            target: label.to_string(),
            unusable: Some(
                "not checked: check speaks plain HTTP to loopback addresses only".into(),
            ),
            ..Diagnosis::default()
        };
    }
    let target = Target {
        name: label.to_string(),
        probe: Probe {
            addr: url.addr,
            host: url.host_header(),
            path: path.to_string(),
            missing: format!("/loadlab-check-missing-{}", std::process::id()),
        },
        pid,
        canary: None,
    };
    let opts = Options {
        only: None,
        quick: true,
        limit: PRE_CHECK_LIMIT,
    };
    let r = check::run(target, &opts, stop);
    Diagnosis {
        target: label.to_string(),
        unusable: r.unusable.clone(),
        seconds: (r.elapsed.as_secs_f64() * 100.0).round() / 100.0,
        checks: r
            .findings
            .iter()
            .map(|f| CheckLine {
                id: f.defect.id.to_string(),
                verdict: f.verdict.word().to_string(),
                evidence: f.evidence.clone(),
                fix: f.defect.fix.to_string(),
            })
            .collect(),
    }
}
