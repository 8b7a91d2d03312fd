//! `loadlab serve`: flags -> ServerConfig -> run until SIGINT/SIGTERM, or
//! the model registry as a listing.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::values::{parse_duration, parse_size, UsageError};
use crate::catalog::models::{Workers, REGISTRY};
use crate::http::Limits;
use crate::server::{self, App, Model, ServerConfig, Shutdown};

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[arg(long, short = 'm', default_value_t = Model::EventLoop, help = model_help())]
    pub model: Model,
    #[arg(long, short = 'w', help = workers_help())]
    pub workers: Option<usize>,
    /// Print each model's name, default workers on this machine and how it
    /// handles connections, tab-separated, one model a line; then exit.
    #[arg(long, exclusive = true)]
    pub list_models: bool,
    /// Address to listen on; port 0 picks a free port (printed on start).
    #[arg(long, short = 'a', default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Directory of static files; without it an embedded docroot is served
    /// (/, /index.html, /500B.html, /20KB.html).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Directory of the file service under /files/ (created if missing).
    /// Default: loadlab/files under the user's data directory
    /// ($XDG_DATA_HOME or ~/.local/share); the startup line prints it.
    #[arg(long, value_name = "DIR")]
    pub files: Option<PathBuf>,
    /// Largest upload to /files/ (e.g. 100M, 1G); larger ones get 413
    /// before anything is written.
    #[arg(long, default_value = "1G", value_parser = parse_size, value_name = "SIZE")]
    pub max_upload: u64,
    /// Most connections open at once (per process for prefork).
    #[arg(long, default_value_t = 10_000)]
    pub max_connections: usize,
    /// Largest request body /echo accepts, and that a route which does not
    /// use its body reads and discards (e.g. 8M); larger ones get 413.
    #[arg(long, default_value = "8M", value_parser = parse_size)]
    pub max_body: u64,
    /// Time a new connection may take to send its first byte; then it is
    /// closed, freeing a blocking model's worker (counted from accept, so
    /// time spent queued for a worker counts).
    #[arg(long, default_value = "3s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub first_byte_timeout: Duration,
    /// Time to receive a whole request head (a connection's first: from
    /// accept), before --min-header-rate extends it.
    #[arg(long, default_value = "10s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub header_timeout: Duration,
    /// The most --min-header-rate extends the header timeout to.
    #[arg(long, default_value = "20s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub header_timeout_max: Duration,
    /// Bytes per second that earn a head one more second (0: no extension).
    #[arg(long, default_value_t = crate::http::limits::MIN_RATE, value_name = "BYTES_PER_S")]
    pub min_header_rate: u64,
    /// Time an idle keep-alive connection is kept.
    #[arg(long, default_value = "5s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub idle_timeout: Duration,
    /// Window over which a request body must average --min-body-rate (so
    /// also the longest pause it may take).
    #[arg(long, default_value = "30s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub body_timeout: Duration,
    /// Bytes per second a request body must average over each
    /// --body-timeout, and from the start of its request (a connection's
    /// first: from accept) after a grace of --header-timeout (0: only the
    /// pause is bounded).
    #[arg(long, default_value_t = crate::http::limits::MIN_RATE, value_name = "BYTES_PER_S")]
    pub min_body_rate: u64,
    /// Window over which a client must take a response at --min-send-rate
    /// (so also the longest it may take nothing).
    #[arg(long, default_value = "30s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub send_timeout: Duration,
    /// Bytes per second a client must read a response at, averaged over
    /// each --send-timeout (0: only a stall is bounded).
    #[arg(long, default_value_t = crate::http::limits::MIN_RATE, value_name = "BYTES_PER_S")]
    pub min_send_rate: u64,
    /// Time in-flight requests get to finish after SIGINT/SIGTERM.
    #[arg(long, default_value = "30s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub shutdown_grace: Duration,
    /// Hand connections to the server as soon as the handshake completes,
    /// not once their request has arrived (TCP_DEFER_ACCEPT, on by
    /// default). Off, a client that connects and sends nothing occupies a
    /// worker of the blocking models at once.
    #[arg(long)]
    pub no_defer_accept: bool,
}

impl ServeArgs {
    /// Second stage: checks values that clap cannot and builds the config.
    pub fn into_config(self) -> anyhow::Result<ServerConfig> {
        if self.max_connections == 0 {
            return Err(UsageError("--max-connections must be at least 1".into()).into());
        }
        if let Some(n) = self.workers {
            self.model
                .check_workers(n)
                .map_err(|e| UsageError(format!("--workers: {e}")))?;
        }
        for (name, d) in [
            ("--first-byte-timeout", self.first_byte_timeout),
            ("--header-timeout", self.header_timeout),
            ("--header-timeout-max", self.header_timeout_max),
            ("--idle-timeout", self.idle_timeout),
            ("--body-timeout", self.body_timeout),
            ("--send-timeout", self.send_timeout),
        ] {
            if d.is_zero() {
                return Err(UsageError(format!("{name} must be greater than 0")).into());
            }
        }
        let limits = self.limits();
        // Every check before anything is created: a refused --root must not
        // leave a new --files directory behind.
        let mut app =
            App::new(self.root, None, self.max_body).map_err(|e| UsageError(format!("{e:#}")))?;
        let files = crate::server::handlers::files::resolve_dir(self.files)
            .map_err(|e| UsageError(format!("{e:#}")))?;
        app.files_dir = Some(files);
        app.max_upload = self.max_upload;
        let mut cfg = ServerConfig::new(self.model, app);
        cfg.workers = self.model.workers(self.workers);
        cfg.max_connections = self.max_connections;
        cfg.shutdown_grace = self.shutdown_grace;
        cfg.defer_accept = !self.no_defer_accept;
        cfg.limits = std::sync::Arc::new(limits);
        Ok(cfg)
    }

    /// The protocol limits and timeouts the flags give.
    fn limits(&self) -> Limits {
        Limits {
            max_body: self.max_body,
            first_byte_timeout: self.first_byte_timeout,
            header_timeout: self.header_timeout,
            header_timeout_max: self.header_timeout_max,
            min_header_rate: self.min_header_rate,
            idle_timeout: self.idle_timeout,
            body_timeout: self.body_timeout,
            min_body_rate: self.min_body_rate,
            send_timeout: self.send_timeout,
            min_send_rate: self.min_send_rate,
        }
    }
}

/// `--model` help: the registry's names. (Parsing goes through
/// `Model::from_str`, whose error names them too, on the one line the CLI
/// prints.)
fn model_help() -> String {
    let names: Vec<&str> = Model::ALL.iter().map(|m| m.name()).collect();
    format!(
        "Concurrency model: {} (--list-models says how each one works)",
        names.join(", ")
    )
}

/// `--workers` help: what a worker is in each model that has them.
fn workers_help() -> String {
    let mut counted = Vec::new();
    let mut ignored = Vec::new();
    for info in REGISTRY {
        match info.workers {
            Workers::Counted { unit, min: 0, .. } => {
                counted.push(format!("{unit} ({}; 0 = grows on demand)", info.name))
            }
            Workers::Counted { unit, .. } => counted.push(format!("{unit} ({})", info.name)),
            Workers::One | Workers::PerConnection => ignored.push(info.name),
        }
    }
    format!(
        "Workers: {}; ignored by {}. Default: per model, from the core count \
         (see --list-models)",
        counted.join(", "),
        ignored.join(", ")
    )
}

/// One line per model: name, tab, workers without `--workers` (as the
/// start-up line would report them), tab, description. The name comes
/// first so that `cut -f1` lists the models.
pub fn list_models(out: &mut impl Write) -> std::io::Result<()> {
    for m in Model::ALL {
        writeln!(out, "{m}\t{}\t{}", m.workers(None), m.info().about)?;
    }
    Ok(())
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    if args.list_models {
        return Ok(list_models(&mut std::io::stdout().lock())?);
    }
    let addr = args.addr;
    let cfg = args.into_config()?;
    // Connections beyond the soft limit would fail in accept with EMFILE.
    // A failure to raise it is not fatal: the server still runs, and
    // accept errors are survived.
    if let Ok(limit) = crate::sys::rlimit::raise_nofile_limit() {
        if (limit as usize) < cfg.max_connections {
            eprintln!(
                "loadlab: the open-file limit is {limit}, below --max-connections {}; \
                 connections past it wait in the listen queue",
                cfg.max_connections
            );
        }
    }
    let shutdown = Shutdown::from_signals()?;
    let listener = server::bind(addr, cfg.model.needs_reuseport(), cfg.defer_accept)
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr()?;
    // Exactly one line, once the model's workers exist (with the number
    // that did start) and flushed before any prefork worker is forked, so
    // scripts and tests can read the port when they asked for port 0.
    let mut announce = |workers: usize, extra: &str| -> anyhow::Result<()> {
        let mut out = std::io::stdout().lock();
        write!(
            out,
            "{}{local} model={} workers={workers}",
            crate::proc::child::STARTUP_PREFIX,
            cfg.model
        )?;
        if !extra.is_empty() {
            write!(out, " {extra}")?;
        }
        if let Some(dir) = &cfg.app.files_dir {
            write!(out, " files={}", dir.display())?;
        }
        writeln!(out)?;
        Ok(out.flush()?)
    };
    server::run(listener, &cfg, &shutdown, &mut announce)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        serve: ServeArgs,
    }

    /// The flags' defaults are written as text for --help; they must be the
    /// named constants the library defaults to.
    #[test]
    fn flag_defaults_are_the_library_defaults() {
        let w = Wrap::try_parse_from(["serve"]).unwrap();
        let (got, want) = (w.serve.limits(), Limits::default());
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
    }
}
