//! `loadlab bench`: ab's flags (same letters, same meaning) plus wrk-style
//! extras; builds a BenchConfig, runs it, renders the report.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use clap::Args;

use super::bench_ab::AbArgs;
use super::bench_output::{ab_layout_files, write_records, Options};
use super::bench_server::{ServerArgs, ServerWatch};
use super::emit_args::EmitArgs;
use super::exit::Exit;
use super::fail_on::{self, Conditions, Observed};
use super::output::{check_writable, emit, same_file, warn_beside};
use super::values::{parse_duration, UsageError};
use crate::bench::clock::parse_start_at;
use crate::bench::progress::{heartbeat_step, ProgressMode};
use crate::bench::render::{
    ab_after_run, ab_preamble, percentile_csv, render_with, version_line, Format,
};
use crate::bench::shard::Shard;
use crate::bench::slow::{SlowClients, SlowSpec};
use crate::bench::verdict::Verdict;
use crate::bench::violations;
use crate::bench::{self, BenchConfig, RequestSpec};
use crate::catalog::slow::SlowKind;
use crate::net::tls::{Protocol, TlsClient, TlsOptions};
use crate::net::url::HttpUrl;
use crate::server::Shutdown;

// Numeric flags take negative numbers (durations: anything starting with
// a hyphen) as values, so that `-n -5` is refused as an invalid count
// rather than as an unknown argument.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Number of requests to perform (ab's default is 1).
    #[arg(short = 'n', value_name = "requests", allow_negative_numbers = true)]
    pub requests: Option<u64>,
    /// Number of requests to make at a time.
    #[arg(
        short = 'c',
        value_name = "concurrency",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub concurrency: usize,
    /// Seconds to max. to spend on benchmarking (no request-count cap).
    #[arg(short = 't', long = "duration", value_name = "timelimit", value_parser = parse_duration, allow_hyphen_values = true)]
    pub timelimit: Option<Duration>,
    /// Use HTTP KeepAlive.
    #[arg(short = 'k')]
    pub keepalive: bool,
    /// File containing data to POST (remember to also set -T).
    #[arg(short = 'p', value_name = "postfile")]
    pub postfile: Option<PathBuf>,
    /// File containing data to PUT (remember to also set -T).
    #[arg(short = 'u', value_name = "putfile")]
    pub putfile: Option<PathBuf>,
    /// Send STRING as the request body (oha's and hey's -d; here -d is
    /// ab's). The method is POST unless -m says otherwise; the content
    /// type is -T's, or text/plain. Not with -p or -u.
    #[arg(long, value_name = "STRING")]
    pub body: Option<String>,
    /// Content-type header to use for POST/PUT data.
    #[arg(short = 'T', value_name = "content-type")]
    pub content_type: Option<String>,
    /// Add an arbitrary header line, e.g. 'Accept-Encoding: gzip' (repeatable).
    #[arg(short = 'H', value_name = "header")]
    pub headers: Vec<String>,
    /// Method name.
    #[arg(short = 'm', value_name = "method")]
    pub method: Option<String>,
    /// Use HEAD instead of GET.
    #[arg(short = 'i')]
    pub head: bool,
    /// Seconds a request may go without a byte moving either way (ab's
    /// per-socket timeout, default 30): a slow but steady response is not
    /// cut off; timed-out requests fail and stay out of the latencies.
    #[arg(short = 's', value_name = "timeout", default_value = "30", value_parser = parse_duration, allow_hyphen_values = true)]
    pub timeout: Duration,
    /// Accept variable document length (for dynamic pages).
    #[arg(short = 'l')]
    pub variable_length: bool,
    /// Count an answer that broke a rule (bytes after its body, a bare LF
    /// in its head, a Date that is not an HTTP-date) as a failed request,
    /// and exit 3 when there was one; without it such an answer counts as
    /// answered, with the violation reported beside it.
    #[arg(long)]
    pub strict: bool,
    /// Don't exit on socket receive errors (always true for loadlab).
    #[arg(short = 'r')]
    pub no_exit_on_errors: bool,
    /// Do not show progress.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Output CSV file with percentages served.
    #[arg(short = 'e', value_name = "csvfile")]
    pub csvfile: Option<PathBuf>,
    /// Add a cookie, eg. 'Apache=1234' (repeatable; all go in one Cookie
    /// header, as RFC 6265 asks, where ab 2.3 sends only the last -C).
    #[arg(short = 'C', value_name = "attribute")]
    pub cookies: Vec<String>,
    /// Add Basic WWW Authentication, 'user:password'.
    #[arg(short = 'A', value_name = "attribute")]
    pub auth: Option<String>,
    /// Disable TLS Server Name Indication (SNI) extension.
    #[arg(short = 'I')]
    pub no_sni: bool,
    /// SSL/TLS protocol: TLS1.2, TLS1.3 or ALL (ab's SSL2, SSL3, TLS1 and
    /// TLS1.1 are refused: rustls does not speak them).
    #[arg(short = 'f', value_name = "protocol", value_parser = Protocol::parse)]
    pub protocol: Option<Protocol>,
    /// SSL/TLS cipher suites, colon-separated, by OpenSSL or IANA name
    /// (only those rustls has; the report uses IANA names).
    #[arg(short = 'Z', value_name = "ciphersuite")]
    pub ciphers: Option<String>,
    /// Trust the CA certificates in this PEM file instead of the system's
    /// (SSL_CERT_FILE does the same for every run).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Do not verify the server's certificate (https).
    #[arg(long)]
    pub insecure: bool,
    /// Load threads, each one event loop (default: number of cores).
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<usize>,
    /// Open loop: schedule requests at this many per second in total, and
    /// measure latency from the scheduled time.
    #[arg(long, allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// Apply load for this long before measuring (at --rate when given).
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true)]
    pub warmup: Option<Duration>,
    /// Fail the run (exit 3) when a condition holds, checked after the
    /// report: comma-separated METRIC OP NUMBER[UNIT], e.g.
    /// 'failed>0,p99>10ms,rps<5000'. Metrics: failed, non2xx, violations, errors,
    /// success_ratio, rps, p50, p90, p99, p999, max (latencies need a
    /// unit: us, ms or s). See docs/guide/reading-results.md.
    #[arg(long, value_name = "CONDITIONS", value_parser = fail_on::parse)]
    pub fail_on: Vec<Conditions>,
    /// Hold slow connections beside the load for the whole run: `header`
    /// trickles a request head that never ends (slowloris), `body` a
    /// request body, `read` reads a large response a few bytes a second.
    /// One thread of its own; a connection the server closes is reopened.
    #[arg(long, value_name = "KIND", value_parser = parse_slow)]
    pub slow: Option<SlowKind>,
    /// How many slow connections --slow holds.
    #[arg(long, default_value_t = 100, requires = "slow", value_name = "N")]
    pub slow_conns: usize,
    /// The path `--slow read` asks for (default: the URL's path); pick a
    /// response larger than the socket buffers that the server does not copy
    /// per request, e.g. /bytes/262144 (larger /bytes/N are built per request).
    #[arg(long, requires = "slow", value_name = "PATH")]
    pub slow_path: Option<String>,
    /// Write every answered request's timings to FILE as CSV, in hey's
    /// `-o csv` columns plus bytes and schedule lag (docs/guide/bench.md).
    #[arg(long, value_name = "FILE")]
    pub per_request: Option<PathBuf>,
    /// Write all measured values out as a 'gnuplot' or TSV (Tab separate
    /// values) file, in ab's columns.
    #[arg(short = 'g', value_name = "gnuplot-file")]
    pub gnuplot: Option<PathBuf>,
    /// Write requests per second over time to FILE as CSV: one row per
    /// second of the run (docs/guide/bench.md).
    #[arg(long, value_name = "FILE")]
    pub series_csv: Option<PathBuf>,
    /// Apply shard I of N of this load (0-based): an exact share of -n, -c
    /// and --rate, on every N-th slot of the open-loop schedule. `auto`
    /// reads SLURM_PROCID/SLURM_NTASKS or JOB_COMPLETION_INDEX/LOADLAB_SHARDS.
    /// Merge the shards' JSON with `loadlab merge`. {shard} and {shards} in
    /// the name of any file written (--out, -e, -g, --per-request,
    /// --series-csv) become the index and count. See docs/guide/distributed.md.
    #[arg(long, value_name = "I/N|auto")]
    pub shard: Option<String>,
    /// Set up and warm up (--warmup), then start measuring at this time:
    /// Unix milliseconds or RFC 3339. The open-loop schedule is anchored
    /// to it, so a late start shows in the corrected latencies.
    #[arg(long, value_name = "TIME", value_parser = parse_start_at)]
    pub start_at: Option<SystemTime>,
    /// Report format.
    #[arg(long, value_enum, default_value = "ab")]
    pub format: Format,
    /// Write the report to this file instead of stdout; with --shard,
    /// {shard} and {shards} in it become the shard's index and count.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    // Boxed: the flags are many, and the Command enum holds them inline.
    #[command(flatten)]
    pub ab: Box<AbArgs>,
    /// `--emit k8s-job` and its flags: print a Job instead of running.
    #[command(flatten)]
    pub emit: EmitArgs,
    /// `--server-pid` and `--profile`: a server to watch over the run.
    #[command(flatten)]
    pub server: ServerArgs,
    /// http[s]://host[:port]/path
    #[arg(required_unless_present = "show_version")]
    pub url: Option<String>,
}

/// An HTTP token (RFC 9110 5.6.2): what a method or a header name is.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// What a header value may hold (RFC 9110 5.5): no control characters but
/// tab, so nothing given on the command line can end the header early and
/// start another (a second Content-Length through -T, say).
fn is_field_value(s: &str) -> bool {
    s.bytes().all(|b| b == b'\t' || !b.is_ascii_control())
}

fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

impl BenchArgs {
    /// Second stage: files read, values checked, config built.
    pub fn into_config(mut self) -> anyhow::Result<(BenchConfig, Options)> {
        let shard = self
            .shard
            .as_deref()
            .map(|spec| Shard::parse(spec, |k| std::env::var(k).ok()))
            .transpose()
            .map_err(|e| usage(e.0))?;
        // Every file a run writes may name its shard, so that the tasks of
        // one srun, which share their arguments, write files of their own.
        let expand = |flag: &str, path: &mut Option<PathBuf>| -> anyhow::Result<()> {
            let Some(p) = path.take() else {
                return Ok(());
            };
            let text = p.to_string_lossy();
            *path = Some(match shard {
                Some(s) => PathBuf::from(s.expand(&text)),
                None if text.contains("{shard") => {
                    return Err(usage(format!(
                        "{flag} {text} names {{shard}} or {{shards}} but no --shard is given"
                    )))
                }
                None => p,
            });
            Ok(())
        };
        expand("--out", &mut self.out)?;
        expand("-e", &mut self.csvfile)?;
        expand("--per-request", &mut self.per_request)?;
        expand("-g", &mut self.gnuplot)?;
        expand("--series-csv", &mut self.series_csv)?;
        let url = self.url.as_deref().unwrap_or_default();
        let target = HttpUrl::parse(url).map_err(|e| usage(e.to_string()))?;
        let ab = self.ab.ab_options(self.format)?;
        let client = self
            .ab
            .client(&target, self.format != Format::Ab && self.out.is_none())?;
        let read = |p: &PathBuf, what: &str| {
            std::fs::read(p)
                .map_err(|e| usage(format!("cannot read {what} file {}: {e}", p.display())))
        };
        // ab refuses to mix HEAD, POST and PUT ("Cannot mix POST with other
        // methods"); so does loadlab, whatever the order of the flags.
        match (self.head, &self.postfile, &self.putfile, &self.method) {
            (true, Some(_), _, _) => return Err(usage("cannot mix HEAD (-i) with POST (-p)")),
            (true, _, Some(_), _) => return Err(usage("cannot mix HEAD (-i) with PUT (-u)")),
            (_, Some(_), Some(_), _) => return Err(usage("cannot mix POST (-p) with PUT (-u)")),
            (true, _, _, Some(m)) if m != "HEAD" => {
                return Err(usage(format!("cannot mix HEAD (-i) with -m {m}")))
            }
            _ => {}
        }
        match (&self.body, &self.postfile, &self.putfile, self.head) {
            (Some(_), Some(_), _, _) => return Err(usage("cannot mix --body with POST (-p)")),
            (Some(_), _, Some(_), _) => return Err(usage("cannot mix --body with PUT (-u)")),
            (Some(_), _, _, true) => return Err(usage("cannot mix --body with HEAD (-i)")),
            _ => {}
        }
        let (body, default_method) = match (&self.postfile, &self.putfile, &self.body) {
            (Some(p), _, _) => (Some(Bytes::from(read(p, "POST")?)), "POST"),
            (None, Some(p), _) => (Some(Bytes::from(read(p, "PUT")?)), "PUT"),
            (None, None, Some(b)) => (Some(Bytes::from(b.clone().into_bytes())), "POST"),
            (None, None, None) if self.head => (None, "HEAD"),
            (None, None, None) => (None, "GET"),
        };
        let method = self
            .method
            .clone()
            .unwrap_or_else(|| default_method.to_string());
        if !is_token(&method) {
            return Err(usage(format!("invalid method '{method}'")));
        }
        let mut headers = Vec::new();
        for h in &self.headers {
            let Some((n, v)) = h.split_once(':') else {
                return Err(usage(format!(
                    "invalid header '{h}': expected 'Name: value'"
                )));
            };
            let n = n.trim();
            if !is_token(n) || !is_field_value(v) {
                return Err(usage(format!("invalid header '{h}'")));
            }
            // A second framing header would make the request ambiguous; the
            // body's length comes from the -p/-u file.
            if n.eq_ignore_ascii_case("content-length")
                || n.eq_ignore_ascii_case("transfer-encoding")
            {
                return Err(usage(format!(
                    "-H cannot set {n}: loadlab frames the -p/-u body itself"
                )));
            }
            headers.push((n.to_string(), v.trim().to_string()));
        }
        if !self
            .cookies
            .iter()
            .chain(&self.auth)
            .chain(&self.content_type)
            .all(|c| is_field_value(c))
        {
            return Err(usage(
                "-C, -A and -T values may not contain line breaks or control characters",
            ));
        }
        if let Some(a) = &self.auth {
            if !a.contains(':') {
                return Err(usage("-A expects 'user:password'"));
            }
        }
        let threads = self.threads.unwrap_or_else(crate::sys::cores);
        // ab performs one request when neither -n nor -t is given.
        let requests = match (self.requests, self.timelimit) {
            (None, None) => Some(1),
            (n, _) => n,
        };
        let cfg = BenchConfig {
            target,
            request: RequestSpec {
                method,
                body,
                content_type: self.content_type.clone(),
                headers,
                cookies: self.cookies.clone(),
                basic_auth: self.auth.clone(),
                keep_alive: self.keepalive,
            },
            requests,
            duration: self.timelimit,
            concurrency: self.concurrency,
            threads,
            timeout: self.timeout,
            rate: self.rate,
            warmup: self.warmup,
            variable_length: self.variable_length,
            strict: self.strict,
            tls: TlsOptions {
                cacert: self.cacert.clone(),
                insecure: self.insecure,
                no_sni: self.no_sni,
                protocol: self.protocol.unwrap_or_default(),
                ciphers: self.ciphers.clone(),
                client_cert: self.ab.client_cert.clone(),
            },
            per_request: self.per_request.is_some() || self.gnuplot.is_some(),

            client,
            shard,
            start_at: self.start_at,
        };
        cfg.validate().map_err(|e| usage(e.0))?;
        // Roots, suites and the server name are checked before any load:
        // a bad --cacert is a usage error, not a run of failed requests.
        if cfg.target.tls {
            TlsClient::new(&cfg.target.host, &cfg.tls).map_err(usage)?;
        }
        // Checked now, not after the load has run and its results would
        // be lost (or one file written and the other not).
        let outputs = [
            ("--out", &self.out),
            ("-e", &self.csvfile),
            ("--per-request", &self.per_request),
            ("-g", &self.gnuplot),
            ("--series-csv", &self.series_csv),
        ];
        let named: Vec<(&str, &PathBuf)> = outputs
            .iter()
            .filter_map(|(f, p)| p.as_ref().map(|p| (*f, p)))
            .collect();
        for (i, (flag, p)) in named.iter().enumerate() {
            check_writable(p, flag)?;
            if let Some((other, _)) = named[..i].iter().find(|(_, o)| same_file(o, p)) {
                return Err(usage(format!(
                    "{other} and {flag} name the same file, {}",
                    p.display()
                )));
            }
        }
        if self.slow.is_some() && cfg.target.tls {
            return Err(usage(
                "--slow speaks plain http only; it cannot go with an https URL",
            ));
        }
        // The slow connections go straight to the server; through -X
        // they would measure another path than the load takes.
        if self.slow.is_some() && cfg.client.proxy.is_some() {
            return Err(usage(
                "--slow connects to the server directly; it cannot go with -X",
            ));
        }
        if self.slow.is_some() && self.slow_conns == 0 {
            return Err(usage("--slow-conns must be at least 1"));
        }
        if self
            .slow_path
            .as_deref()
            .is_some_and(|p| !p.starts_with('/'))
        {
            return Err(usage("--slow-path must start with /"));
        }
        let slow = self.slow.map(|kind| SlowSpec {
            kind,
            conns: self.slow_conns,
            addr: cfg.target.addr,
            host: cfg.target.host_header(),
            path: self
                .slow_path
                .clone()
                .unwrap_or_else(|| cfg.target.path.clone()),
        });
        let alone = [
            ("--warmup", self.warmup.is_some()),
            ("--shard", shard.is_some()),
            ("--start-at", self.start_at.is_some()),
        ];
        let server = self
            .server
            .spec(alone.iter().find(|(_, given)| *given).map(|(f, _)| *f))?;
        let opts = Options {
            server,
            slow,
            fail_on: Conditions::join(&self.fail_on),
            format: self.format,
            ab,
            out: self.out,
            csvfile: self.csvfile,
            per_request: self.per_request,
            gnuplot: self.gnuplot,
            series_csv: self.series_csv,
            quiet: self.quiet,
        };
        Ok((cfg, opts))
    }
}

/// `--slow`: header, body or read (`none` is for sweeps: the client
/// alone).
fn parse_slow(s: &str) -> Result<SlowKind, String> {
    match s.parse::<SlowKind>() {
        Ok(SlowKind::None) | Err(_) => Err(format!("--slow takes header, body or read, not '{s}'")),
        Ok(kind) => Ok(kind),
    }
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    if args.ab.show_version {
        println!("{}", version_line());
        return Ok(());
    }
    let (cfg, opts) = args.into_config()?;
    let slow_conns = opts.slow.as_ref().map_or(0, |s| s.conns);
    bench::ensure_fd_limit(cfg.part().concurrency + slow_conns).map_err(|e| usage(e.0))?;
    let shutdown = Shutdown::from_signals()?;
    // ab's heartbeats go to stderr whatever it is, unless -q; the live bar
    // only to a terminal.
    let mode = ProgressMode {
        bar: !opts.quiet && std::io::stderr().is_terminal(),
        heartbeats: !opts.quiet,
    };
    let heartbeats = mode.heartbeats && heartbeat_step(cfg.requests).is_some();
    // ab's stdout as it goes: banner and "Benchmarking HOST (be patient)"
    // now, the rest after the run. A file gets the report alone.
    // With -w ab prints its HTML alone, as loadlab does.
    let live_ab = opts.format == Format::Ab && opts.out.is_none() && opts.ab.html.is_none();
    if live_ab {
        emit(&ab_preamble(&cfg.target.host, heartbeats), None)?;
    }
    let stop = || shutdown.is_set();
    // Before the slow connections: the pass is the run's load alone.
    let counted = opts
        .server
        .as_ref()
        .map(|s| super::bench_server::count(s, &cfg, &stop));
    let slow = match opts.slow.clone() {
        Some(spec) => Some(
            SlowClients::start(spec.clone())
                .map_err(|e| anyhow::anyhow!("cannot start the slow connections: {e}"))
                .map(|c| (spec, c))?,
        ),
        None => None,
    };
    let watch = opts
        .server
        .clone()
        .zip(counted)
        .map(|(s, c)| ServerWatch::start(s, c));
    let mut result = bench::run(&cfg, Some(&stop), mode);
    if let (Some(w), Ok(r)) = (watch, result.as_mut()) {
        w.finish(r)?;
    }
    if let Some((spec, clients)) = slow {
        let r = clients.finish();
        eprintln!(
            "loadlab: {} slow {} connections held: {} established, {} closed by the server \
             (and reopened), {} failed to connect, {} open at the end",
            spec.conns,
            spec.kind.name(),
            r.connected,
            r.closed_by_server,
            r.connect_failures,
            r.held_at_end
        );
    }
    let result = result?;
    let report = match live_ab {
        true => ab_after_run(&result, heartbeats, opts.ab.layout),
        false => render_with(&result, opts.format, &opts.ab),
    };
    emit(&report, opts.out.as_deref())?;
    if let Some(path) = &opts.csvfile {
        emit(&percentile_csv(&result), Some(path))?;
    }
    write_records(&result, &opts)?;
    warn_beside(&ab_layout_files(&opts), &Verdict::of(&result));
    // A run with nothing usable has one line to say, and it is not this.
    if let (Some(w), None) = (result.rate_shortfall(), result.stats.nothing_usable()) {
        eprintln!("loadlab: warning: {w}");
    }
    // The report is out (it says what failed or what was cut short); the
    // exit status says so in one line: Ctrl-C first, then a run that
    // measured nothing (as ab's 111 and wrk's 1 for a refused connection),
    // then the user's own conditions.
    if shutdown.is_set() {
        return Err(Exit::interrupted(
            "the report covers the requests made until then",
        ));
    }
    // Before "nothing usable": under --strict every answer of a server
    // with one framing bug fails, and the bug is what to say.
    if cfg.strict && !result.stats.violations.is_empty() {
        return Err(Exit::conditions_held(&[format!(
            "answers broke HTTP's rules (--strict counts them as failed): {}",
            violations::summary(&result.stats.violations)
        )]));
    }
    if let Some(why) = result.stats.nothing_usable() {
        anyhow::bail!("bench measured nothing usable: {why}");
    }
    let held = opts.fail_on.held(&Observed::of_bench(&result));
    match held.is_empty() {
        true => Ok(()),
        false => Err(Exit::conditions_held(&held)),
    }
}
