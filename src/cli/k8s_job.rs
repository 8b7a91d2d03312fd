//! `loadlab bench ... --emit k8s-job --shards N`: the bench command as a
//! Kubernetes Indexed Job of N shards, printed instead of run. Each pod runs
//! the same command with `--shard auto` (Kubernetes sets
//! JOB_COMPLETION_INDEX, the manifest LOADLAB_SHARDS) and one `--start-at`,
//! and prints its JSON result to stdout, collected with `kubectl logs`.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Parser;
use serde::Serialize;

use super::bench::BenchArgs;
use super::emit_args::EmitArgs;
use super::output::emit;
use super::values::UsageError;
use super::{Cli, Command};
use crate::bench::clock::parse_start_at;
use crate::bench::render::Format;
use crate::bench::shard::{Shard, MAX_SHARDS};
use crate::net::url::{HttpUrl, UrlError};

/// Flags of [`EmitArgs`] as typed on the command line: taken out of the
/// pods' arguments (with their values).
const EMIT_FLAGS: [&str; 4] = ["--emit", "--shards", "--image", "--job-name"];

/// The image when `--image` is not given: one tagged with this binary's
/// version, so that the pods write JSON that this `loadlab merge` reads.
pub const DEFAULT_IMAGE: &str = concat!("loadlab:", env!("CARGO_PKG_VERSION"));

/// The Job's name when `--job-name` is not given.
pub const DEFAULT_JOB_NAME: &str = "loadlab-bench";

/// Longest Job name: Kubernetes puts it in the pods' `job-name` label,
/// whose values hold at most 63 characters.
pub const MAX_JOB_NAME: usize = 63;

/// Time from printing the manifest to the shards' start when no
/// `--start-at` is given: enough to apply it, schedule the pods and pull
/// a small image. A pod that starts later still runs, late: its lateness
/// shows as start skew and, open loop, as corrected latency.
pub const START_LEAD: Duration = Duration::from_secs(120);

/// Prints the Job for `args` (`raw`: the arguments after `bench`, as
/// typed) to stdout, and on stderr when its shards will start.
pub fn run(mut args: BenchArgs, raw: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let raw: Vec<String> = raw
        .into_iter()
        .map(|a| {
            a.into_string().map_err(|a| {
                usage(format!(
                    "--emit k8s-job: argument {a:?} is not UTF-8, which a manifest cannot hold"
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    let flags = std::mem::take(&mut args.emit);
    let count = shard_count(&flags)?;
    refuse_local_outputs(&args, &raw)?;
    let start_at = match args.start_at {
        Some(t) if t < SystemTime::now() => {
            return Err(usage(
                "--start-at is in the past: every pod would start late; give a later time",
            ))
        }
        Some(t) => t,
        None => SystemTime::now() + START_LEAD,
    };
    let start_ms = start_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let pod_args = pod_args(&args, &raw, start_ms);
    // What each pod runs is what the user typed, shard aside: the pods'
    // arguments must parse to these very flags, or the quoting is wrong.
    args.shard = Some("auto".into());
    args.start_at = Some(parse_start_at(&start_ms.to_string()).map_err(usage)?);
    args.format = Format::Json;
    args.quiet = true;
    let expected = format!("{args:?}");
    match Cli::try_parse_from(std::iter::once("loadlab").chain(pod_args.iter().map(|s| &**s))) {
        Ok(Cli {
            command: Some(Command::Bench(b)),
        }) if format!("{b:?}") == expected => {}
        _ => anyhow::bail!(
            "--emit k8s-job: the pods' arguments would not repeat this command exactly: {pod_args:?}"
        ),
    }
    let files = files_read(&args);
    check_every_shard(args, count)?;
    let job = job(
        flags.job_name.as_deref().unwrap_or(DEFAULT_JOB_NAME),
        flags.image.as_deref().unwrap_or(DEFAULT_IMAGE),
        count,
        pod_args,
    )?;
    let mut text = serde_json::to_string_pretty(&job)?;
    text.push('\n');
    note(start_at, start_ms, count, &files);
    emit(&text, None)
}

fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// `--shards N`, required and a valid shard count; `--shard` is the
/// manifest's to set.
fn shard_count(emit: &EmitArgs) -> anyhow::Result<u32> {
    let Some(n) = emit.shards else {
        return Err(usage(
            "--emit k8s-job needs --shards N: how many pods apply the load",
        ));
    };
    match u32::try_from(n) {
        Ok(n) if (1..=MAX_SHARDS).contains(&n) => Ok(n),
        _ => Err(usage(format!("--shards {n}: give 1 to {MAX_SHARDS}"))),
    }
}

/// Refuses what a pod could not hand back through `kubectl logs`: files
/// it would write inside its container, a report other than JSON (`raw`
/// tells an explicit `--format ab` from the default), and lines on stderr
/// (which the logs mix into the JSON).
fn refuse_local_outputs(args: &BenchArgs, raw: &[String]) -> anyhow::Result<()> {
    if args.shard.is_some() {
        return Err(usage(
            "--emit k8s-job gives each pod --shard auto itself; drop --shard",
        ));
    }
    let files = [
        ("--out", args.out.is_some()),
        ("-e", args.csvfile.is_some()),
        ("-g", args.gnuplot.is_some()),
        ("--per-request", args.per_request.is_some()),
        ("--series-csv", args.series_csv.is_some()),
    ];
    if let Some((flag, _)) = files.iter().find(|(_, given)| *given) {
        return Err(usage(format!(
            "--emit k8s-job: {flag} would write inside the pod, out of reach; \
             each pod prints its JSON result for kubectl logs instead"
        )));
    }
    let format_given = raw
        .iter()
        .any(|a| a == "--format" || a.starts_with("--format="));
    if args.format != Format::Json && format_given {
        return Err(usage(
            "--emit k8s-job: the pods print JSON (for loadlab merge); drop --format",
        ));
    }
    if args.slow.is_some() || args.ab.verbosity.is_some_and(|v| v >= 2) {
        return Err(usage(
            "--emit k8s-job: --slow and -v 2+ write to stderr, which kubectl logs mixes into the JSON",
        ));
    }
    Ok(())
}

/// The pods' arguments: `bench`, what loadlab adds (first, so that a `--`
/// before the URL cannot make them positional), then `raw` without the
/// --emit flags.
pub fn pod_args(args: &BenchArgs, raw: &[String], start_ms: u128) -> Vec<String> {
    let mut out: Vec<String> = ["bench", "--shard", "auto"].map(String::from).to_vec();
    if args.start_at.is_none() {
        out.extend(["--start-at".to_string(), start_ms.to_string()]);
    }
    if args.format != Format::Json {
        out.extend(["--format", "json"].map(String::from));
    }
    if !args.quiet {
        out.push("-q".into());
    }
    let mut rest = raw.iter();
    while let Some(a) = rest.next() {
        if a == "--" {
            out.push(a.clone());
            out.extend(rest.cloned());
            break;
        }
        if EMIT_FLAGS.contains(&a.as_str()) {
            rest.next();
            continue;
        }
        let inline = |f: &&str| a.strip_prefix(f).is_some_and(|v| v.starts_with('='));
        if !EMIT_FLAGS.iter().any(inline) {
            out.push(a.clone());
        }
    }
    out
}

/// Validates the load as every pod will run it, shard i of N for each i,
/// before any pod starts: -c below N, a shard whose share of -n is below
/// its share of -c, a -p file that cannot be read.
fn check_every_shard(mut args: BenchArgs, count: u32) -> anyhow::Result<()> {
    args.shard = Some(format!("0/{count}"));
    // A host only the cluster resolves (a Service's name) need not resolve
    // here: the checks then stand 127.0.0.1 in for it (none connects).
    if let Some(Err(UrlError::Unresolved { authority, .. })) =
        args.url.as_deref().map(HttpUrl::parse)
    {
        args.url = args
            .url
            .map(|u| u.replacen(&authority, STAND_IN_AUTHORITY, 1));
    }
    let (mut cfg, _) = args.into_config()?;
    for index in 1..count {
        cfg.shard = Some(Shard { index, count });
        cfg.validate().map_err(|e| usage(e.0))?;
    }
    Ok(())
}

/// Where the checks of a load point when its host resolves only in the
/// cluster: an address of this machine, never contacted.
const STAND_IN_AUTHORITY: &str = "127.0.0.1:1";

/// Files the pods read: the image must hold them at the same paths.
fn files_read(args: &BenchArgs) -> Vec<String> {
    [
        &args.postfile,
        &args.putfile,
        &args.cacert,
        &args.ab.client_cert,
    ]
    .into_iter()
    .flatten()
    .map(|p| p.display().to_string())
    .collect()
}

/// When the shards start, on stderr (stdout carries the manifest alone).
fn note(start_at: SystemTime, start_ms: u128, count: u32, files: &[String]) {
    let lead = start_at
        .duration_since(SystemTime::now())
        .unwrap_or_default()
        .as_secs();
    eprintln!(
        "loadlab: the Job's {count} shards start measuring at {start_ms} (Unix ms, in {lead} s): \
         apply it before then; collect the results with kubectl logs (docs/guide/distributed.md)"
    );
    if !files.is_empty() {
        eprintln!(
            "loadlab: note: the pods read {}: the image must hold them at the same paths",
            files.join(", ")
        );
    }
}

/// A Job name Kubernetes accepts: a DNS-1123 label (lowercase letters,
/// digits and '-', starting and ending with a letter or digit).
fn check_job_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_JOB_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    match ok {
        true => Ok(()),
        false => Err(usage(format!(
            "invalid --job-name '{name}': lowercase letters, digits and '-', \
             at most {MAX_JOB_NAME}, starting and ending with a letter or digit"
        ))),
    }
}

/// The Job: N pods at once (parallelism = completions), each run once
/// (a retried shard would count its requests twice), spread over nodes
/// where the cluster has them.
fn job(name: &str, image: &str, count: u32, args: Vec<String>) -> anyhow::Result<Job> {
    check_job_name(name)?;
    if image.is_empty() || image.contains(char::is_whitespace) {
        return Err(usage(format!("invalid --image '{image}'")));
    }
    let labels = BTreeMap::from([("app.kubernetes.io/name", "loadlab".to_string())]);
    Ok(Job {
        api_version: "batch/v1",
        kind: "Job",
        metadata: Metadata {
            name: Some(name.to_string()),
            labels: labels.clone(),
        },
        spec: JobSpec {
            completion_mode: "Indexed",
            completions: count,
            parallelism: count,
            backoff_limit: 0,
            template: PodTemplate {
                metadata: Metadata { name: None, labels },
                spec: PodSpec {
                    restart_policy: "Never",
                    containers: vec![Container {
                        name: "loadlab",
                        image: image.to_string(),
                        command: vec!["loadlab".into()],
                        args,
                        env: vec![EnvVar {
                            name: "LOADLAB_SHARDS",
                            value: count.to_string(),
                        }],
                    }],
                    topology_spread_constraints: vec![Spread {
                        max_skew: 1,
                        topology_key: "kubernetes.io/hostname",
                        when_unsatisfiable: "ScheduleAnyway",
                        label_selector: Selector {
                            match_labels: BTreeMap::from([(
                                "batch.kubernetes.io/job-name",
                                name.to_string(),
                            )]),
                        },
                    }],
                },
            },
        },
    })
}

// The manifest's shape: the fields loadlab sets of Kubernetes' batch/v1
// Job, in its JSON names (tests read it back with k8s-openapi's types).

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Job {
    api_version: &'static str,
    kind: &'static str,
    metadata: Metadata,
    spec: JobSpec,
}

#[derive(Serialize)]
struct Metadata {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    labels: BTreeMap<&'static str, String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JobSpec {
    completion_mode: &'static str,
    completions: u32,
    parallelism: u32,
    backoff_limit: u32,
    template: PodTemplate,
}

#[derive(Serialize)]
struct PodTemplate {
    metadata: Metadata,
    spec: PodSpec,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PodSpec {
    restart_policy: &'static str,
    containers: Vec<Container>,
    topology_spread_constraints: Vec<Spread>,
}

#[derive(Serialize)]
struct Container {
    name: &'static str,
    image: String,
    command: Vec<String>,
    args: Vec<String>,
    env: Vec<EnvVar>,
}

#[derive(Serialize)]
struct EnvVar {
    name: &'static str,
    value: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Spread {
    max_skew: u32,
    topology_key: &'static str,
    when_unsatisfiable: &'static str,
    label_selector: Selector,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Selector {
    match_labels: BTreeMap<&'static str, String>,
}
