//! What a benchmark run is asked to do: the target URL, the request bytes
//! (built once), and the load shape (count or duration, concurrency,
//! keep-alive, open-loop rate).

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;

/// A parsed `http://host[:port]/path?query` target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// Path and query, as sent on the request line.
    pub path: String,
    pub addr: SocketAddr,
}

/// A target or option that cannot work; the CLI turns it into exit code 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(msg.into()))
}

impl Target {
    /// Parses and resolves a URL. Only plain http is supported.
    pub fn parse(url: &str) -> Result<Target, ConfigError> {
        let lower = url.to_ascii_lowercase();
        if lower.starts_with("https://") {
            return err("https is not supported yet; use an http:// URL");
        }
        let Some(rest) = url.get(7..).filter(|_| lower.starts_with("http://")) else {
            return err(format!(
                "invalid URL '{url}': expected http://host[:port]/path"
            ));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        if authority.contains('@') {
            return err(format!(
                "invalid URL '{url}': user info is not supported; use -A user:pass"
            ));
        }
        let (host, port) = split_host_port(authority)
            .ok_or_else(|| ConfigError(format!("invalid URL '{url}': bad host or port")))?;
        if host.is_empty() {
            return err(format!("invalid URL '{url}': no host"));
        }
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return err(format!(
                "invalid URL '{url}': the path has spaces or control characters"
            ));
        }
        let addr = (host.trim_start_matches('[').trim_end_matches(']'), port)
            .to_socket_addrs()
            .map_err(|e| ConfigError(format!("cannot resolve '{host}': {e}")))?
            .next()
            .ok_or_else(|| ConfigError(format!("cannot resolve '{host}'")))?;
        Ok(Target {
            host: host.to_string(),
            port,
            path,
            addr,
        })
    }

    /// The Host header value: the port is left out when it is the default.
    pub fn host_header(&self) -> String {
        if self.port == 80 {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

fn split_host_port(a: &str) -> Option<(&str, u16)> {
    if let Some(end) = a.strip_prefix('[').and_then(|r| r.find(']')) {
        let host = &a[..end + 2];
        return match &a[end + 2..] {
            "" => Some((host, 80)),
            p => p.strip_prefix(':')?.parse().ok().map(|p| (host, p)),
        };
    }
    match a.rsplit_once(':') {
        Some((h, p)) => p.parse().ok().filter(|&p| p != 0).map(|p| (h, p)),
        None => Some((a, 80)),
    }
}

/// The request every connection sends, and how it is framed.
#[derive(Debug, Clone, Default)]
pub struct RequestSpec {
    pub method: String,
    pub body: Option<Bytes>,
    pub content_type: Option<String>,
    /// Extra `Name: value` headers; one named Host replaces the default.
    pub headers: Vec<(String, String)>,
    pub cookies: Vec<String>,
    pub basic_auth: Option<String>,
    pub keep_alive: bool,
}

impl RequestSpec {
    /// Builds the request bytes once. HTTP/1.0 as ab sends it, so a server
    /// sees the same thing from ab and from loadlab; keep-alive is asked for
    /// with `Connection: Keep-Alive` exactly as ab does with -k.
    pub fn encode(&self, target: &Target) -> Bytes {
        let mut s = format!("{} {} HTTP/1.0\r\n", self.method, target.path);
        if self.keep_alive {
            s.push_str("Connection: Keep-Alive\r\n");
        }
        let has = |n: &str| self.headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(n));
        if !has("host") {
            s.push_str(&format!("Host: {}\r\n", target.host_header()));
        }
        if !has("user-agent") {
            s.push_str(concat!(
                "User-Agent: loadlab/",
                env!("CARGO_PKG_VERSION"),
                "\r\n"
            ));
        }
        if !has("accept") {
            s.push_str("Accept: */*\r\n");
        }
        for c in &self.cookies {
            s.push_str(&format!("Cookie: {c}\r\n"));
        }
        if let Some(up) = &self.basic_auth {
            let enc = base64::engine::general_purpose::STANDARD.encode(up.as_bytes());
            s.push_str(&format!("Authorization: Basic {enc}\r\n"));
        }
        for (n, v) in &self.headers {
            s.push_str(&format!("{n}: {v}\r\n"));
        }
        if let Some(body) = &self.body {
            let ct = self.content_type.as_deref().unwrap_or("text/plain");
            if !has("content-type") {
                s.push_str(&format!("Content-Type: {ct}\r\n"));
            }
            s.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        s.push_str("\r\n");
        let mut out = s.into_bytes();
        if let Some(body) = &self.body {
            out.extend_from_slice(body);
        }
        Bytes::from(out)
    }

    pub fn is_head(&self) -> bool {
        self.method == "HEAD"
    }
}

/// The load shape of one run.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub target: Target,
    pub request: RequestSpec,
    /// Exactly this many requests (with a duration, at most this many).
    pub requests: Option<u64>,
    /// Stop starting requests after this long.
    pub duration: Option<Duration>,
    pub concurrency: usize,
    pub threads: usize,
    /// A request that takes longer than this fails as a timeout.
    pub timeout: Duration,
    /// Open loop: requests scheduled at this many per second in total.
    pub rate: Option<f64>,
    /// Load applied before measuring starts, not counted.
    pub warmup: Option<Duration>,
    /// Responses may vary in length without counting as failures (ab -l).
    pub variable_length: bool,
}

impl BenchConfig {
    /// Checks the combination of values; the CLI reports these with exit 2.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.concurrency == 0 {
            return err("concurrency (-c) must be at least 1");
        }
        if self.threads == 0 {
            return err("--threads must be at least 1");
        }
        match (self.requests, self.duration) {
            (None, None) => return err("give a request count (-n) or a duration (-t)"),
            (Some(0), _) => return err("the number of requests (-n) must be at least 1"),
            (Some(n), None) if n < self.concurrency as u64 => {
                return err(format!(
                "cannot use concurrency level {} greater than the number of requests {n} (-n < -c)",
                self.concurrency
            ))
            }
            (_, Some(d)) if d.is_zero() => {
                return err("the time limit (-t) must be greater than 0")
            }
            _ => {}
        }
        if self.timeout.is_zero() {
            return err("the timeout (-s) must be greater than 0");
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return err("--rate must be a positive number of requests per second");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls_and_refuses_https() {
        let t = Target::parse("http://127.0.0.1:8080/a?b=1").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 8080, "/a?b=1")
        );
        let t = Target::parse("http://127.0.0.1:9").unwrap();
        assert_eq!(t.path, "/");
        assert!(Target::parse("https://127.0.0.1/")
            .unwrap_err()
            .0
            .contains("https"));
        assert!(Target::parse("ftp://x/").is_err());
        assert!(Target::parse("http://127.0.0.1:99999/").is_err());
        assert!(Target::parse("127.0.0.1/").is_err());
    }
}
