//! `loadlab check TARGET`: starts the target as a sweep would (or reaches
//! a running URL), plants a canary above what it serves, checks it, prints
//! text or JSON, and exits 0 (nothing failed), 3 (a check failed), 1
//! (not a server) or 2 (bad usage).

use std::path::Path;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::exit::{Exit, CONDITION_HELD, NOTHING_USABLE};
use super::output::emit;
use super::values::{parse_duration, UsageError};
use crate::check::catalogue::DEFECTS;
use crate::check::probe::Probe;
use crate::check::render;
use crate::check::{self, Canary, Options, Target};
use crate::net::url::HttpUrl;
use crate::proc::target::{Running, StartContext, TargetSpec};
use crate::server::Shutdown;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// What to check, in the sweep's target syntax: `model:NAME`, `nginx`,
    /// `go`, `cmd:COMMAND` (`{port}` is replaced by a free port, `{root}`
    /// by a directory of files to serve), `url:http://...`, or a bare
    /// http:// URL. Only loopback addresses.
    #[arg(value_name = "TARGET")]
    pub target: String,
    /// The resource the checks ask for (a `url:` target's own path wins,
    /// unless it is just `/`).
    #[arg(long, default_value = "/")]
    pub path: String,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Only these checks (ids, comma-separated; see docs/guide/check.md).
    #[arg(long, value_delimiter = ',', value_name = "ID,...")]
    pub only: Option<Vec<String>>,
    /// Only the framing and connection checks, briefly (what a sweep runs
    /// before measuring).
    #[arg(long)]
    pub quick: bool,
    /// The whole check's time (default 30s); checks not begun by then are
    /// reported as skipped.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub time_limit: Duration,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// The target spec: a bare http(s) URL is a `url:` target.
fn spec_of(text: &str) -> anyhow::Result<TargetSpec> {
    let lower = text.to_ascii_lowercase();
    let text = if lower.starts_with("http://") || lower.starts_with("https://") {
        format!("url:{text}")
    } else {
        text.to_string()
    };
    let spec: TargetSpec = text.parse().map_err(usage)?;
    if let TargetSpec::Url { base, .. } = &spec {
        let url = HttpUrl::parse(base).map_err(|e| usage(e.to_string()))?;
        if url.tls {
            return Err(usage(
                "check speaks plain HTTP/1.1; give the server's http:// address",
            ));
        }
        if !url.addr.ip().is_loopback() {
            return Err(usage(format!(
                "check sends bursts and malformed requests, so it only checks loopback addresses (127.0.0.1, ::1), not {}",
                url.addr.ip()
            )));
        }
    }
    Ok(spec)
}

pub fn run(args: CheckArgs) -> anyhow::Result<()> {
    let spec = spec_of(&args.target)?;
    if let Some(only) = &args.only {
        if let Some(bad) = only.iter().find(|id| !DEFECTS.iter().any(|d| d.id == *id)) {
            return Err(usage(format!(
                "unknown check '{bad}' in --only (ids are listed in docs/guide/check.md)"
            )));
        }
    }
    if let (true, Some(only)) = (args.quick, &args.only) {
        if let Some(id) = only
            .iter()
            .find(|id| !DEFECTS.iter().any(|d| d.id == *id && d.family.quick()))
        {
            return Err(usage(format!(
                "--quick runs the framing and connection checks only, not '{id}'"
            )));
        }
    }
    if !args.path.starts_with('/') {
        return Err(usage(format!(
            "--path must start with '/': '{}'",
            args.path
        )));
    }
    if args.time_limit.is_zero() {
        return Err(usage("--time-limit must be greater than 0"));
    }
    let shutdown = Shutdown::from_signals()?;
    let stop = || shutdown.is_set();
    // Files to serve in www/, the canary beside it; all gone on return.
    let scratch = tempfile::Builder::new()
        .prefix("loadlab-check-")
        .tempdir()?;
    let docroot = scratch.path().join("www");
    std::fs::create_dir(&docroot)?;
    crate::server::handlers::write_embedded_docroot(&docroot)?;
    let ctx = StartContext {
        exe: std::env::current_exe()?,
        docroot: docroot.clone(),
        backlog: crate::server::LISTEN_BACKLOG,
    };
    let running = Running::start(&spec, &ctx, None, None, &stop).map_err(|e| {
        if stop() {
            Exit::interrupted("nothing was checked")
        } else {
            Exit {
                code: NOTHING_USABLE,
                reason: format!("not a server: {spec} did not start: {e:#}"),
            }
            .into()
        }
    })?;
    let url = HttpUrl::parse(&running.base).map_err(|e| usage(e.to_string()))?;
    let canary = plant_canary(&spec, scratch.path())?;
    // A URL with no path of its own (`http://host:port`) reads as `/`:
    // --path then says which resource to check.
    let path = match spec.own_path() {
        Some(own) if own != "/" => own,
        _ => &args.path,
    }
    .to_string();
    let target = Target {
        name: spec.to_string(),
        probe: Probe {
            addr: url.addr,
            host: url.host_header(),
            path,
            missing: format!("/loadlab-check-missing-{}", token()),
        },
        pid: running.pid,
        canary,
    };
    let opts = Options {
        only: args.only.clone(),
        quick: args.quick,
        limit: args.time_limit,
    };
    let mut report = check::run(target, &opts, &stop);
    if matches!(spec, TargetSpec::Model { model, .. } if model.name() == "iterative") {
        if let Some(f) = report
            .findings
            .iter_mut()
            .find(|f| f.defect.id == "slowloris-blocks")
        {
            f.note = Some(
                "by design: the iterative model serves one connection at a time, so a slow head holds everyone".into(),
            );
        }
    }
    drop(running);
    let text = match args.format {
        Format::Text => render::text(&report),
        Format::Json => render::json(&report),
    };
    emit(&text, None)?;
    if report.interrupted {
        return Err(Exit::interrupted("the checks not yet run were not"));
    }
    // A server that stopped being one with nothing failed is not usable;
    // one that failed a check first (a crash on bad input) failed it.
    if let (Some(why), true) = (&report.unusable, report.failed().is_empty()) {
        return Err(Exit {
            code: NOTHING_USABLE,
            reason: why.clone(),
        }
        .into());
    }
    let failed = report.failed();
    if !failed.is_empty() {
        return Err(Exit {
            code: CONDITION_HELD,
            reason: format!(
                "{} check{} failed: {}",
                failed.len(),
                if failed.len() == 1 { "" } else { "s" },
                failed.join(", ")
            ),
        }
        .into());
    }
    Ok(())
}

/// A canary file above the served directory, for targets loadlab starts
/// serving that directory from disk (nginx, Go, and `cmd:` with `{root}`).
/// The built-in models serve files built into the binary, so a canary
/// beside a directory they never read proves nothing: they, like `url:`
/// targets, are probed for a body that looks like /etc/passwd.
fn plant_canary(spec: &TargetSpec, scratch: &Path) -> anyhow::Result<Option<Canary>> {
    let serves_docroot = match spec {
        TargetSpec::Cmd { command } => command.contains("{root}"),
        TargetSpec::Url { .. } | TargetSpec::Model { .. } => false,
        _ => true,
    };
    if !serves_docroot {
        return Ok(None);
    }
    // The content differs from the name, so a page echoing the path asked
    // for is not taken for the file.
    let name = format!("loadlab-canary-{}.txt", token());
    let token = format!(
        "canary content {}",
        token().chars().rev().collect::<String>()
    );
    let path = scratch.join(&name);
    std::fs::write(&path, format!("{token}\n"))?;
    Ok(Some(Canary {
        name,
        path: path.to_string_lossy().into_owned(),
        token,
    }))
}

/// A name no server holds: time and pid mixed.
fn token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}", nanos ^ ((std::process::id() as u128) << 64))
}
