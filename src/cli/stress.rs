//! `loadlab stress`: flags -> StressConfig -> run the matrix with a
//! progress bar -> table on stdout, CSV/JSON/Markdown in `--out`.
//!
//! List flags are taken as text and parsed here, so every bad value is
//! one line naming the flag (exit 2).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::exit::Exit;
use super::sweep_progress::say;
use super::values::{parse_duration, parse_size, UsageError};
use crate::catalog::presets::{Preset, PresetKind};
use crate::lab::diagnose::diagnose_at;
use crate::net::url::HttpUrl;
use crate::report;
use crate::results::stress::size_label;
use crate::server::Model;
use crate::stress::{self, client, Matrix, Op, StressConfig, StressEvent, StressReport, Target};

/// Most clients or server workers one cell may ask for: each client is a
/// thread, each prefork worker a process.
const MAX_POOL: usize = 1000;
/// `--timeout` when not given: long enough for a 100 MB transfer that
/// waits for a worker behind 49 others.
const DEFAULT_TIMEOUT: &str = "10m";

#[derive(Args, Debug)]
#[command(after_help = report::stress::LEGEND)]
pub struct StressArgs {
    /// Operations, comma-separated: upload, download.
    #[arg(long, value_name = "LIST")]
    pub ops: Option<String>,
    /// File sizes, comma-separated (e.g. 10M,50M,100M).
    #[arg(long, value_name = "LIST")]
    pub sizes: Option<String>,
    /// Concurrent clients per cell, comma-separated (e.g. 1,5,50).
    #[arg(long, value_name = "LIST")]
    pub clients: Option<String>,
    /// Server workers, comma-separated (what a worker is depends on the
    /// model, see `loadlab serve --help`; 0 = a thread pool that grows).
    #[arg(long, value_name = "LIST")]
    pub server_workers: Option<String>,
    /// Server models, comma-separated (`loadlab serve --list-models`).
    #[arg(long, value_name = "LIST")]
    pub models: Option<String>,
    /// Use a running server with the same /files/ API instead of starting
    /// loadlab serve (e.g. http://127.0.0.1:8080 or .../files/).
    #[arg(long)]
    pub url: Option<String>,
    /// Longest time one client may take for one transfer, waiting for a
    /// free server worker included, and computing the SHA-256 of its test
    /// file the first time it is needed.
    #[arg(long, default_value = DEFAULT_TIMEOUT, allow_hyphen_values = true)]
    pub timeout: String,
    /// Directory for stress.csv, stress.json and stress.md.
    #[arg(long, default_value = "loadlab-stress", value_name = "DIR")]
    pub out: PathBuf,
    /// Where the run makes its scratch directory (created if missing; the
    /// largest cell's files must fit in its free space, checked first):
    /// the upload directories of the servers it starts. Client
    /// files are generated from a seed as they are sent, never stored.
    /// Removed at the end. Default: the system's temporary directory
    /// ($TMPDIR or /tmp).
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
    /// Start from a reference matrix (e2: 108 cells, 2 ops x 3 sizes x 3
    /// client pools x 3 server pools x 2 models); other flags override its
    /// lists.
    #[arg(long, value_parser = stress_preset)]
    pub preset: Option<Preset>,
    /// A small version of the matrix (sizes 1M,10M; clients 1,10;
    /// workers 1,4) for a first look in seconds.
    #[arg(long)]
    pub quick: bool,
    /// No progress on stderr (a bar on a terminal, otherwise one line per
    /// cell).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Restrict the servers stress starts to their first N CPUs, or `all`;
    /// its clients run on the others. Default: half the CPUs loadlab may
    /// use (no effect with --url, whose server is not stress's).
    #[arg(long, value_name = "N|all", value_parser = super::cpus::parse_cpus)]
    pub cpus: Option<super::cpus::CpuCount>,
    /// Skip the check of each server's framing and connections before its
    /// first cell (`loadlab check --quick`, at most 1 s a server).
    #[arg(long)]
    pub no_check: bool,
}

impl StressArgs {
    /// Second stage: every value checked, the matrix built.
    pub fn into_config(self) -> Result<StressConfig, UsageError> {
        let mut m = if self.quick {
            Matrix::quick()
        } else {
            // E2 is the one stress preset (`stress_preset` refuses others).
            Matrix::e2()
        };
        if let Some(v) = &self.ops {
            m.ops = list("--ops", v, |s| s.parse::<Op>())?;
        }
        if let Some(v) = &self.sizes {
            m.sizes = list("--sizes", v, |s| match parse_size(s)? {
                0 => Err("sizes must be at least 1 byte".to_string()),
                n => Ok(n),
            })?;
        }
        if let Some(v) = &self.clients {
            m.clients = list("--clients", v, |s| pool(s, 1))?;
        }
        let external = self.url.is_some();
        if external && (self.server_workers.is_some() || self.models.is_some()) {
            return Err(UsageError(
                "--server-workers and --models apply to servers stress starts; drop them with --url"
                    .into(),
            ));
        }
        if let Some(v) = &self.server_workers {
            m.server_workers = list("--server-workers", v, |s| pool(s, 0))?;
        }
        if let Some(v) = &self.models {
            m.models = list("--models", v, |s| s.parse::<Model>())?;
        }
        for &model in &m.models {
            for &n in &m.server_workers {
                model
                    .check_workers(n)
                    .map_err(|e| UsageError(format!("--server-workers: {e}")))?;
            }
        }
        let timeout =
            parse_duration(&self.timeout).map_err(|e| UsageError(format!("--timeout: {e}")))?;
        if timeout.is_zero() {
            return Err(UsageError("--timeout must be greater than 0".into()));
        }
        if let Some(dir) = self.scratch.as_ref().filter(|d| d.exists() && !d.is_dir()) {
            return Err(UsageError(format!(
                "--scratch {}: not a directory",
                dir.display()
            )));
        }
        if self.url.is_none() {
            // The servers started here keep the largest cell's files (one
            // per client, each of the largest size) in the scratch space.
            let need = m.max_size().saturating_mul(m.max_clients() as u64);
            crate::stress::scratch::check_room(self.scratch.as_deref(), need).map_err(|e| {
                UsageError(format!(
                    "--sizes: {e}; give smaller --sizes or --clients, or --scratch on a larger disk"
                ))
            })?;
        }
        let target = match self.url {
            None => Target::Spawn,
            Some(url) => {
                let endpoint = client::files_url(&url).map_err(UsageError)?;
                Target::Url { url, endpoint }
            }
        };
        let cpus = match self.cpus {
            Some(c) => c.0,
            None => crate::proc::affinity::default_split(),
        };
        if let Some(n) = cpus {
            crate::proc::affinity::first_allowed(n).map_err(UsageError)?;
        }
        Ok(StressConfig {
            matrix: m,
            target,
            timeout,
            scratch: self.scratch,
            cpus,
        })
    }
}

/// `--preset`: a preset of kind `Stress`.
fn stress_preset(s: &str) -> Result<Preset, String> {
    let p: Preset = s.parse()?;
    match p.kind() {
        PresetKind::Stress => Ok(p),
        PresetKind::Sweep => Err(format!(
            "{p} is a sweep; run it with `loadlab sweep --preset {p}`"
        )),
    }
}

/// Parses a comma-separated, non-empty list.
fn list<T, E: std::fmt::Display>(
    flag: &str,
    v: &str,
    parse: impl Fn(&str) -> Result<T, E>,
) -> Result<Vec<T>, UsageError> {
    let items: Vec<&str> = v.split(',').map(str::trim).collect();
    if items.iter().any(|s| s.is_empty()) {
        return Err(UsageError(format!("{flag}: empty item in '{v}'")));
    }
    items
        .into_iter()
        .map(|s| parse(s).map_err(|e| UsageError(format!("{flag}: {e}"))))
        .collect()
}

fn pool(s: &str, min: usize) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (min..=MAX_POOL).contains(&n) => Ok(n),
        _ => Err(format!("'{s}' is not a number from {min} to {MAX_POOL}")),
    }
}

/// Progress on stderr, as a sweep's: a bar on a terminal, one line per
/// cell otherwise (a CI log, or `sweep --preset e2` under a script),
/// neither with -q. Failed cells are named in every case but -q.
struct StressProgress {
    bar: Option<ProgressBar>,
    lines: bool,
    total: usize,
    done: usize,
}

impl StressProgress {
    fn new(quiet: bool) -> StressProgress {
        let terminal = std::io::stderr().is_terminal();
        let bar = (!quiet && terminal).then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        StressProgress {
            bar,
            lines: !quiet && !terminal,
            total: 0,
            done: 0,
        }
    }

    fn say(&self, line: String) {
        match &self.bar {
            Some(b) => b.println(line),
            None if self.lines => say(&line),
            None => {}
        }
    }

    fn event(&mut self, e: StressEvent) {
        match e {
            StressEvent::Planned { cells } => {
                self.total = cells;
                if let Some(b) = &self.bar {
                    b.set_length(cells as u64);
                }
                self.say(format!("loadlab: {cells} cells to run"));
            }
            StressEvent::Note(msg) => match &self.bar {
                Some(b) => b.set_message(msg.to_string()),
                None => self.say(format!("loadlab: {msg}")),
            },
            StressEvent::CellStarted(cell) => {
                if let Some(b) = &self.bar {
                    b.set_message(cell.to_string());
                }
            }
            StressEvent::CellDone(row) => {
                self.done += 1;
                if let Some(b) = &self.bar {
                    b.inc(1);
                }
                let what = format!(
                    "{} {} x{} {}{}",
                    row.op,
                    size_label(row.size),
                    row.clients,
                    row.model,
                    row.server_workers
                        .map_or(String::new(), |w| format!(" w={w}"))
                );
                if row.failed > 0 {
                    self.say(format!("{what}: {} failed: {}", row.failed, row.error));
                } else if self.lines {
                    say(&format!(
                        "loadlab: cell {}/{} {what}: {} verified, {:.1} MB/s",
                        self.done,
                        self.total,
                        row.verified,
                        row.aggregate_bps / 1e6
                    ));
                }
            }
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// A stress preset with its defaults, as `loadlab sweep --preset e2`
/// runs it.
pub fn run_preset(preset: Preset, quick: bool, quiet: bool, out: PathBuf) -> anyhow::Result<()> {
    run(StressArgs {
        ops: None,
        sizes: None,
        clients: None,
        server_workers: None,
        models: None,
        url: None,
        timeout: DEFAULT_TIMEOUT.into(),
        out,
        scratch: None,
        preset: Some(preset),
        quick,
        quiet,
        no_check: false,
        cpus: None,
    })
}

pub fn run(args: StressArgs) -> anyhow::Result<()> {
    let out_dir = args.out.clone();
    let quiet = args.quiet;
    let checks = !args.no_check;
    let cfg = args.into_config()?;
    let mut progress = StressProgress::new(quiet);
    let shutdown = crate::server::Shutdown::from_signals()?;
    let stop = || shutdown.is_set();
    let check = |label: &str, ep: &HttpUrl, pid: Option<u32>| {
        let base = format!("http://{}", ep.addr);
        checks.then(|| diagnose_at(label, &base, pid, &ep.path, &stop))
    };
    let report = stress::run(&cfg, &check, &stop, &mut |e| progress.event(e))?;
    progress.finish();
    let mut files = report::stress::write_files(&out_dir, &report)?;
    let page = report::stress_page::StressInputs::of(&report);
    files.push(report::stress_page::render(&out_dir, &page)?);
    let mut out = std::io::stdout().lock();
    out.write_all(report::stress::terminal_table(&report.rows).as_bytes())?;
    writeln!(
        out,
        "\n{} transfers, {} failed; temporary files left: {}; scratch removed: {}",
        report.transfers(),
        report.failures(),
        report.temp_files_label(),
        match (&report.scratch, report.scratch_removed) {
            (None, _) => "none used",
            (Some(_), true) => "yes",
            (Some(_), false) => "no",
        }
    )?;
    for n in &report.notes {
        writeln!(out, "note: {n}")?;
    }
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    writeln!(out, "wrote {}", names.join(", "))?;
    out.flush()?;
    stress_exit(&report, shutdown.is_set())
}

/// The exit status every subcommand shares: 130 after Ctrl-C; 1 when not
/// one transfer was verified; 3 when some failed or files were left
/// behind, stress's built-in condition (its job is to find exactly
/// that); 0 otherwise.
fn stress_exit(report: &StressReport, interrupted: bool) -> anyhow::Result<()> {
    if interrupted {
        return Err(Exit::interrupted(&format!(
            "the cell in progress was stopped and not recorded, its servers stopped and the scratch space removed; the table and files hold the {} cells made before",
            report.rows.len()
        )));
    }
    let (failed, all) = (report.failures(), report.transfers());
    if all == 0 || failed == all {
        anyhow::bail!("stress measured nothing usable: {failed} of {all} transfers failed");
    }
    let mut held = Vec::new();
    if failed > 0 {
        held.push(format!("stress: {failed} of {all} transfers failed"));
    }
    if !report.clean() {
        held.push("stress: the run left files behind (see notes)".to_string());
    }
    match held.is_empty() {
        true => Ok(()),
        false => Err(Exit::conditions_held(&held)),
    }
}
