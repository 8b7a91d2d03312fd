//! `loadlab bench`'s remaining ab flags: report variants (-w -x -y -z, -d,
//! -S), the client's sockets (-B, -b), a proxy (-X, -P), a client
//! certificate (-E), troubleshooting lines (-v) and the version (-V); and
//! the one-line refusal of ab flags loadlab does not have.

use std::net::{IpAddr, ToSocketAddrs};
use std::path::PathBuf;

use clap::Args;

use super::values::UsageError;
use crate::bench::engine::dial::check_bindable;
use crate::bench::render::{AbLayout, AbOptions, Format, HtmlAttrs};
use crate::bench::ClientOptions;
use crate::net::url::{HttpUrl, UrlError};

#[derive(Args, Debug, Default)]
pub struct AbArgs {
    /// Print the results in HTML tables (ab's layout).
    #[arg(short = 'w')]
    pub html: bool,
    /// String to insert as table attributes (with -w).
    #[arg(short = 'x', value_name = "attributes")]
    pub table_attrs: Option<String>,
    /// String to insert as tr attributes (with -w).
    #[arg(short = 'y', value_name = "attributes")]
    pub tr_attrs: Option<String>,
    /// String to insert as td or th attributes (with -w; ab's default
    /// is bgcolor=white).
    #[arg(short = 'z', value_name = "attributes")]
    pub cell_attrs: Option<String>,
    /// Do not show the percentiles served table.
    #[arg(short = 'd')]
    pub no_percentiles: bool,
    /// Do not show confidence estimators (mean[+/-sd], median) and
    /// warnings: ab's min/avg/max layout.
    #[arg(short = 'S')]
    pub no_confidence: bool,
    /// How much troubleshooting info to print: 2 the request sent and
    /// each response head received (and non-2xx warnings), 3 also every
    /// status code. On stdout, as ab, unless stdout carries --format
    /// json or csv (then stderr).
    #[arg(short = 'v', value_name = "verbosity")]
    pub verbosity: Option<u8>,
    /// Proxy server and port to use (http: absolute-form requests;
    /// https: a CONNECT tunnel per connection).
    #[arg(short = 'X', value_name = "proxy:port")]
    pub proxy: Option<String>,
    /// Add Basic Proxy Authentication, 'user:password' (with -X).
    #[arg(short = 'P', value_name = "attribute")]
    pub proxy_auth: Option<String>,
    /// Address to bind to when making outgoing connections.
    #[arg(short = 'B', value_name = "address")]
    pub bind: Option<String>,
    /// Size of TCP send/receive buffer, in bytes (SO_SNDBUF/SO_RCVBUF).
    #[arg(short = 'b', value_name = "windowsize", allow_negative_numbers = true)]
    pub window: Option<i64>,
    /// Client certificate chain and private key, PEM in one file (https).
    #[arg(short = 'E', value_name = "certfile")]
    pub client_cert: Option<PathBuf>,
    /// Print version number and exit.
    #[arg(short = 'V')]
    pub show_version: bool,
}

fn usage<T>(msg: impl Into<String>) -> anyhow::Result<T> {
    Err(UsageError(msg.into()).into())
}

/// ab's flags that loadlab bench does not take, and why, so that each is
/// refused by name instead of as an "unexpected argument" (the -W, -R
/// and -Q of ab's development version; ab 2.3's flags are all taken).
const REFUSED: [(&str, &str); 3] = [
    (
        "-W",
        "ab's worker threads are --threads in loadlab (default: one per core)",
    ),
    (
        "-R",
        "ab's ramp-up delay between new connections is not supported",
    ),
    ("-Q", "ab's option to leave out its banner is not supported"),
];

/// The one-line refusal of an ab flag loadlab lacks, if `arg` is one
/// (`arg` as clap reports it, possibly with its value attached).
pub fn refusal(arg: &str) -> Option<String> {
    REFUSED
        .iter()
        .find(|(flag, _)| arg.starts_with(flag))
        .map(|(flag, why)| format!("bench {flag}: {why}"))
}

impl AbArgs {
    /// -d, -S and -w with its attributes, for `format`.
    pub fn ab_options(&self, format: Format) -> anyhow::Result<AbOptions> {
        let ab_only = [
            (self.html, "-w"),
            (self.no_percentiles, "-d"),
            (self.no_confidence, "-S"),
        ];
        if let Some((_, flag)) = ab_only.iter().find(|(on, _)| *on) {
            if format != Format::Ab {
                return usage(format!(
                    "{flag} shapes ab's report; it cannot go with --format {}",
                    format_name(format)
                ));
            }
        }
        let attrs = [
            (&self.table_attrs, "-x"),
            (&self.tr_attrs, "-y"),
            (&self.cell_attrs, "-z"),
        ];
        for (value, flag) in attrs {
            if value.is_some() && !self.html {
                return usage(format!(
                    "{flag} sets attributes of -w's HTML tables; give -w"
                ));
            }
            if value.as_deref().is_some_and(|v| v.contains(['<', '>'])) {
                return usage(format!("{flag} takes attributes, not tags ('<' or '>')"));
            }
        }
        let html = self.html.then(|| {
            let d = HtmlAttrs::default();
            HtmlAttrs {
                table: self.table_attrs.clone().unwrap_or(d.table),
                tr: self.tr_attrs.clone().unwrap_or(d.tr),
                cell: self.cell_attrs.clone().unwrap_or(d.cell),
            }
        });
        Ok(AbOptions {
            layout: AbLayout {
                percentiles: !self.no_percentiles,
                confidence: !self.no_confidence,
            },
            html,
        })
    }

    /// -X, -P, -B, -b and -v for a run against `target`; `stdout_report`
    /// says a JSON or CSV report goes to stdout (-v's lines then go to
    /// stderr).
    pub fn client(&self, target: &HttpUrl, stdout_report: bool) -> anyhow::Result<ClientOptions> {
        let proxy = match &self.proxy {
            None => None,
            Some(x) => Some(proxy_addr(x)?),
        };
        if let Some(p) = &self.proxy_auth {
            if proxy.is_none() {
                return usage("-P gives the proxy's credentials; it needs -X proxy:port");
            }
            if !p.contains(':') || p.bytes().any(|b| b.is_ascii_control()) {
                return usage("-P expects 'user:password'");
            }
        }
        let local_addr = match &self.bind {
            None => None,
            Some(b) => Some(bind_addr(b, target)?),
        };
        let socket_buffer = match self.window {
            None => None,
            Some(w) if w <= 0 => return usage(format!("-b {w}: the buffer size must be positive")),
            Some(w) => Some(w as usize),
        };
        if self.client_cert.is_some() && !target.tls {
            return usage("-E gives a client certificate for https; the URL is http");
        }
        Ok(ClientOptions {
            proxy,
            proxy_auth: self.proxy_auth.clone(),
            local_addr,
            socket_buffer,
            verbosity: self.verbosity.unwrap_or(0),
            log_to_stderr: stdout_report,
        })
    }
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::Ab => "ab",
        Format::Json => "json",
        Format::Csv => "csv",
    }
}

/// -X's `host[:port]` (port 80 when left out, as in ab), resolved.
fn proxy_addr(x: &str) -> anyhow::Result<std::net::SocketAddr> {
    if x.contains(['/', '@']) {
        return usage(format!("-X {x}: expected proxy[:port]"));
    }
    match HttpUrl::parse(&format!("http://{x}/")) {
        Ok(u) => Ok(u.addr),
        Err(UrlError::Unresolved { host, why, .. }) => {
            usage(format!("-X {x}: cannot resolve '{host}'{why}"))
        }
        Err(_) => usage(format!("-X {x}: expected proxy[:port]")),
    }
}

/// -B's address (an IP, or a name resolved in the target's family),
/// checked to be one of this host's.
fn bind_addr(b: &str, target: &HttpUrl) -> anyhow::Result<IpAddr> {
    let ip = match b.trim_start_matches('[').trim_end_matches(']').parse() {
        Ok(ip) => ip,
        Err(_) => {
            let found = (b, 0)
                .to_socket_addrs()
                .ok()
                .and_then(|mut all| all.find(|a| a.is_ipv4() == target.addr.is_ipv4()));
            match found {
                Some(a) => a.ip(),
                None => return usage(format!("-B {b}: cannot resolve it to an address")),
            }
        }
    };
    if let Err(e) = check_bindable(ip) {
        return usage(format!("-B {b}: cannot bind to it: {e}"));
    }
    Ok(ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abs_missing_flags_are_refused_by_name_in_one_line() {
        for f in ["-W", "-W4", "-R", "-Q"] {
            let why = refusal(f).unwrap();
            assert!(why.contains(&f[..2]) && !why.contains('\n'), "{why}");
        }
        assert_eq!(refusal("-j"), None);
        assert_eq!(refusal("-g"), None, "-g is taken: ab's gnuplot file");
        assert_eq!(refusal("--frobnicate"), None);
    }
}
