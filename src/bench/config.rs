//! What a benchmark run is asked to do: the target URL, the request bytes
//! (built once), and the load shape (count or duration, concurrency,
//! keep-alive, open-loop rate).

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use bytes::Bytes;

use super::records::MAX_RECORDS;
use super::shard::Shard;
use crate::net::tls::TlsOptions;
use crate::net::url::HttpUrl;

/// Highest `--rate`: one request per nanosecond of the schedule.
pub const MAX_RATE: f64 = 1e9;

/// An option that cannot work; the CLI turns it into exit code 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(msg.into()))
}

/// The request every connection sends, and how it is framed.
#[derive(Debug, Clone, Default)]
pub struct RequestSpec {
    pub method: String,
    pub body: Option<Bytes>,
    pub content_type: Option<String>,
    /// Extra `Name: value` headers; one named Host, User-Agent, Accept or
    /// Content-Type replaces the default one, as in ab.
    pub headers: Vec<(String, String)>,
    /// `name=value` pairs, sent in one Cookie header.
    pub cookies: Vec<String>,
    /// `user:password` for Basic authentication.
    pub basic_auth: Option<String>,
    pub keep_alive: bool,
}

/// `user:password` as a Basic credential (RFC 7617).
fn basic(user_pass: &str) -> String {
    let enc = base64::engine::general_purpose::STANDARD.encode(user_pass.as_bytes());
    format!("Basic {enc}")
}

/// Where the request goes: to the server itself, or to an http proxy
/// (ab's -X), which is sent the absolute URI and, with -P, credentials.
#[derive(Debug, Clone, Copy, Default)]
pub enum Via<'a> {
    #[default]
    Direct,
    Proxy {
        auth: Option<&'a str>,
    },
}

/// The CONNECT request that opens a tunnel through a proxy to an https
/// target (RFC 9110 9.3.6), with `Proxy-Authorization` for -P.
pub fn connect_request(target: &HttpUrl, proxy_auth: Option<&str>) -> Bytes {
    let authority = format!("{}:{}", target.host, target.port);
    let mut s = format!("CONNECT {authority} HTTP/1.0\r\nHost: {authority}\r\n");
    if let Some(up) = proxy_auth {
        s.push_str(&format!("Proxy-Authorization: {}\r\n", basic(up)));
    }
    s.push_str("\r\n");
    Bytes::from(s)
}

impl RequestSpec {
    /// Builds the request bytes once. HTTP/1.0 as ab sends it, so a server
    /// sees the same thing from ab and from loadlab; keep-alive is asked for
    /// with `Connection: Keep-Alive` exactly as ab does with -k.
    pub fn encode(&self, target: &HttpUrl) -> Bytes {
        self.encode_via(target, Via::Direct)
    }

    /// `encode`, for the server or for an http proxy in between.
    pub fn encode_via(&self, target: &HttpUrl, via: Via) -> Bytes {
        let mut s = match via {
            Via::Direct => format!("{} {} HTTP/1.0\r\n", self.method, target.path),
            Via::Proxy { .. } => format!(
                "{} {}://{}{} HTTP/1.0\r\n",
                self.method,
                target.scheme(),
                target.host_header(),
                target.path
            ),
        };
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
        // One Cookie header for all -C values: RFC 6265 forbids a client
        // to send more than one.
        if !self.cookies.is_empty() {
            s.push_str(&format!("Cookie: {}\r\n", self.cookies.join("; ")));
        }
        if let Some(up) = &self.basic_auth {
            s.push_str(&format!("Authorization: {}\r\n", basic(up)));
        }
        if let Via::Proxy { auth: Some(up) } = via {
            s.push_str(&format!("Proxy-Authorization: {}\r\n", basic(up)));
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
    pub target: HttpUrl,
    pub request: RequestSpec,
    /// Exactly this many requests (with a duration, at most this many).
    pub requests: Option<u64>,
    /// Stop starting requests after this long.
    pub duration: Option<Duration>,
    pub concurrency: usize,
    pub threads: usize,
    /// A request whose socket moves no byte for this long fails as a
    /// timeout (ab's -s: inactivity, not a deadline for the response).
    pub timeout: Duration,
    /// Open loop: requests scheduled at this many per second in total.
    pub rate: Option<f64>,
    /// Load applied before measuring starts, not counted.
    pub warmup: Option<Duration>,
    /// Responses may vary in length without counting as failures (ab -l).
    pub variable_length: bool,
    /// An answer that broke a rule (a violation) counts as failed.
    pub strict: bool,
    /// How an https target is spoken to (ignored for http).
    pub tls: TlsOptions,
    /// Keep each answered request's timings (`--per-request`, `-g`).
    pub per_request: bool,

    /// How sockets are made and what is logged (ab's -X -P -B -b -v).
    pub client: ClientOptions,
    /// This process applies one shard of the load; `requests`,
    /// `concurrency` and `rate` above stay the totals ([`BenchConfig::part`]
    /// gives the shard's shares).
    pub shard: Option<Shard>,
    /// Wall-clock time measuring starts (`--start-at`); the open-loop
    /// schedule is anchored to it, warm-up runs before it.
    pub start_at: Option<SystemTime>,
}

/// ab's options for the client's sockets and its troubleshooting output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientOptions {
    /// -X: connect to this proxy instead of the server; http requests go
    /// in absolute form, https ones through a CONNECT tunnel.
    pub proxy: Option<SocketAddr>,
    /// -P: `user:password` for the proxy (Basic).
    pub proxy_auth: Option<String>,
    /// -B: the local address client sockets are bound to.
    pub local_addr: Option<IpAddr>,
    /// -b: SO_SNDBUF and SO_RCVBUF of client sockets, in bytes.
    pub socket_buffer: Option<usize>,
    /// -v: 2 and up log the request sent and each response head, with a
    /// warning for a status other than 2xx; 3 and up every status code.
    pub verbosity: u8,
    /// -v's lines go to stderr instead of stdout (where ab puts them),
    /// since stdout carries a JSON or CSV report.
    pub log_to_stderr: bool,
}

/// Largest -b: the kernel caps buffers at `net.core.[rw]mem_max` anyway,
/// and a bigger value is a typo, not a wish.
pub const MAX_SOCKET_BUFFER: usize = 1 << 30;

/// A request times out after this long without a byte moving, unless -s
/// says otherwise (ab's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

impl BenchConfig {
    /// One connection, one thread, closed loop and no count or duration
    /// yet; every option at ab's default. Callers set what they measure.
    pub fn new(target: HttpUrl, request: RequestSpec) -> BenchConfig {
        BenchConfig {
            target,
            request,
            requests: None,
            duration: None,
            concurrency: 1,
            threads: 1,
            timeout: DEFAULT_TIMEOUT,
            rate: None,
            warmup: None,
            variable_length: false,
            strict: false,
            tls: Default::default(),
            per_request: false,
            client: Default::default(),
            shard: None,
            start_at: None,
        }
    }

    /// The bytes every request sends, addressed for a proxy when -X is
    /// given and the target is http (an https request goes through the
    /// tunnel as it would go to the server).
    pub fn request_bytes(&self) -> Bytes {
        let via = match (&self.client.proxy, self.target.tls) {
            (Some(_), false) => Via::Proxy {
                auth: self.client.proxy_auth.as_deref(),
            },
            _ => Via::Direct,
        };
        self.request.encode_via(&self.target, via)
    }

    /// The CONNECT request each new connection sends first: https through
    /// a proxy only.
    pub fn tunnel_request(&self) -> Option<Bytes> {
        match (&self.client.proxy, self.target.tls) {
            (Some(_), true) => Some(connect_request(
                &self.target,
                self.client.proxy_auth.as_deref(),
            )),
            _ => None,
        }
    }

    /// Where sockets connect: the proxy when -X is given, else the server.
    pub fn connect_addr(&self) -> SocketAddr {
        self.client.proxy.unwrap_or(self.target.addr)
    }
}

impl BenchConfig {
    /// The load this process applies: the whole, or its shard's exact
    /// share of the request count, connections and rate. Open loop with a
    /// count, a shard's requests are its slots of the shared schedule
    /// (`Shard::slot_share`), so the shards together send its first -n.
    pub fn part(&self) -> BenchConfig {
        let Some(s) = self.shard else {
            return self.clone();
        };
        let requests = match self.rate {
            Some(_) => self.requests.map(|n| s.slot_share(n)),
            None => self.requests.map(|n| s.share(n)),
        };
        let mut concurrency = s.share(self.concurrency as u64) as usize;
        // Never more connections than requests: an uneven split (-n 8 -c 7
        // over 5 gives shard 2 one request and two connections) would
        // otherwise refuse a load one process runs, and the extra
        // connection would have nothing to send.
        if let (Some(n), None) = (requests, self.duration) {
            concurrency = concurrency.min(usize::try_from(n).unwrap_or(usize::MAX));
        }
        BenchConfig {
            requests,
            concurrency,
            rate: self.rate.map(|r| r / f64::from(s.count)),
            ..self.clone()
        }
    }

    /// Checks the combination of values; the CLI reports these with exit 2.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_totals()?;
        if let Some(s) = self.shard {
            // Every shard needs a connection of its own.
            if (self.concurrency as u64) < u64::from(s.count) {
                return err(format!(
                    "concurrency (-c) {} is below the shard count {}: every shard needs a connection",
                    self.concurrency, s.count
                ));
            }
            self.part()
                .validate_totals()
                .map_err(|e| ConfigError(format!("shard {s}: {}", e.0)))?;
        }
        Ok(())
    }

    fn validate_totals(&self) -> Result<(), ConfigError> {
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
        match self.requests {
            Some(n) if self.per_request && n > MAX_RECORDS => {
                return err(format!(
                    "per-request records (--per-request, -g) keep at most {MAX_RECORDS} requests \
                     (about 160 MB); -n {n} asks for more"
                ))
            }
            _ => {}
        }
        if self.timeout.is_zero() {
            return err("the timeout (-s) must be greater than 0");
        }
        if let Some(b) = self.client.socket_buffer {
            if b == 0 || b > MAX_SOCKET_BUFFER {
                return err(format!(
                    "the socket buffer size (-b) must be 1 to {MAX_SOCKET_BUFFER} bytes"
                ));
            }
        }
        if let Some(local) = self.client.local_addr {
            let to = self.connect_addr();
            if local.is_ipv4() != to.is_ipv4() {
                return err(format!(
                    "-B {local} cannot reach {}: one is IPv4, the other IPv6",
                    to.ip()
                ));
            }
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return err("--rate must be a positive number of requests per second");
            }
            // Send times are scheduled in nanoseconds: past 1e9/s slots
            // would coincide and the schedule's arithmetic would overflow.
            if r > MAX_RATE {
                return err("--rate is at most 1e9 requests per second");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> HttpUrl {
        HttpUrl::parse("http://127.0.0.1:8080/p?q=1").unwrap()
    }

    /// Parses encoded request bytes: method, path, headers in order, body.
    fn decode(bytes: &[u8]) -> (String, String, Vec<(String, String)>, Vec<u8>) {
        let mut slots = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut slots);
        let httparse::Status::Complete(n) = req.parse(bytes).unwrap() else {
            panic!("incomplete request head");
        };
        assert_eq!(req.version, Some(0), "HTTP/1.0, as ab sends");
        let headers = req
            .headers
            .iter()
            .map(|h| {
                let v = String::from_utf8(h.value.to_vec()).unwrap();
                (h.name.to_ascii_lowercase(), v)
            })
            .collect();
        let (m, p) = (req.method.unwrap().into(), req.path.unwrap().into());
        (m, p, headers, bytes[n..].to_vec())
    }

    fn values<'a>(h: &'a [(String, String)], name: &str) -> Vec<&'a str> {
        h.iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    fn get() -> RequestSpec {
        RequestSpec {
            method: "GET".into(),
            ..RequestSpec::default()
        }
    }

    #[test]
    fn a_plain_get_carries_abs_default_headers() {
        let (m, p, h, body) = decode(&get().encode(&target()));
        assert_eq!((m.as_str(), p.as_str()), ("GET", "/p?q=1"));
        assert_eq!(values(&h, "host"), ["127.0.0.1:8080"]);
        assert_eq!(values(&h, "accept"), ["*/*"]);
        assert_eq!(values(&h, "user-agent").len(), 1);
        assert!(
            values(&h, "connection").is_empty(),
            "no keep-alive without -k"
        );
        assert!(values(&h, "content-length").is_empty());
        assert!(body.is_empty());
        let mut ka = get();
        ka.keep_alive = true;
        let (_, _, h, _) = decode(&ka.encode(&target()));
        assert_eq!(values(&h, "connection"), ["Keep-Alive"]);
    }

    #[test]
    fn h_replaces_the_default_host_user_agent_and_accept() {
        let mut r = get();
        r.headers = vec![
            ("host".into(), "example.test".into()),
            ("User-Agent".into(), "probe/1".into()),
            ("Accept".into(), "text/html".into()),
            ("X-Trace".into(), "abc".into()),
        ];
        let (_, _, h, _) = decode(&r.encode(&target()));
        assert_eq!(values(&h, "host"), ["example.test"]);
        assert_eq!(values(&h, "user-agent"), ["probe/1"]);
        assert_eq!(values(&h, "accept"), ["text/html"]);
        assert_eq!(values(&h, "x-trace"), ["abc"]);
        // The default port is left out of the Host header.
        let t = HttpUrl::parse("http://127.0.0.1/").unwrap();
        let (_, _, h, _) = decode(&get().encode(&t));
        assert_eq!(values(&h, "host"), ["127.0.0.1"]);
    }

    #[test]
    fn cookies_go_in_one_header_and_credentials_are_base64() {
        let mut r = get();
        r.cookies = vec!["a=1".into(), "b=2".into()];
        r.basic_auth = Some("user:pa:ss".into());
        let (_, _, h, _) = decode(&r.encode(&target()));
        assert_eq!(values(&h, "cookie"), ["a=1; b=2"]);
        // base64("user:pa:ss"): everything after the first colon is the password.
        assert_eq!(values(&h, "authorization"), ["Basic dXNlcjpwYTpzcw=="]);
    }

    #[test]
    fn a_body_gets_its_length_and_content_type() {
        let mut r = RequestSpec {
            method: "POST".into(),
            body: Some(Bytes::from_static(b"hello")),
            ..RequestSpec::default()
        };
        let (m, _, h, body) = decode(&r.encode(&target()));
        assert_eq!(m, "POST");
        assert_eq!(values(&h, "content-length"), ["5"]);
        assert_eq!(values(&h, "content-type"), ["text/plain"], "ab's default");
        assert_eq!(body, b"hello");
        r.content_type = Some("application/json".into());
        let (_, _, h, _) = decode(&r.encode(&target()));
        assert_eq!(values(&h, "content-type"), ["application/json"]);
        // A Content-Type given with -H wins over -T, and is not doubled.
        r.headers = vec![("Content-Type".into(), "text/csv".into())];
        let (_, _, h, _) = decode(&r.encode(&target()));
        assert_eq!(values(&h, "content-type"), ["text/csv"]);
    }

    #[test]
    fn a_request_to_a_proxy_names_the_whole_url_and_carries_proxy_auth() {
        let via = Via::Proxy {
            auth: Some("pu:pp"),
        };
        let bytes = get().encode_via(&target(), via);
        let (_, p, h, _) = decode(&bytes);
        assert_eq!(p, "http://127.0.0.1:8080/p?q=1", "absolute form");
        assert_eq!(values(&h, "host"), ["127.0.0.1:8080"]);
        // base64("pu:pp")
        assert_eq!(values(&h, "proxy-authorization"), ["Basic cHU6cHA="]);
        let (_, _, h, _) = decode(&get().encode(&target()));
        assert!(values(&h, "proxy-authorization").is_empty(), "direct");
        let c = connect_request(&target(), Some("pu:pp"));
        assert_eq!(
            &c[..],
            b"CONNECT 127.0.0.1:8080 HTTP/1.0\r\nHost: 127.0.0.1:8080\r\n\
              Proxy-Authorization: Basic cHU6cHA=\r\n\r\n"
        );
    }

    #[test]
    fn head_and_custom_methods_are_sent_as_given() {
        let mut r = get();
        r.method = "HEAD".into();
        assert!(r.is_head());
        assert!(r.encode(&target()).starts_with(b"HEAD /p?q=1 HTTP/1.0\r\n"));
        r.method = "PATCH".into();
        assert!(!r.is_head());
        assert!(r
            .encode(&target())
            .starts_with(b"PATCH /p?q=1 HTTP/1.0\r\n"));
    }

    /// The two ways a shard takes its part of -n (docs/guide/distributed.md):
    /// open loop its slots of the one schedule, ceil((n - i)/N), lowest
    /// indices first; closed loop floor((i+1)n/N) - floor(in/N). Both add
    /// up to -n.
    #[test]
    fn shard_request_shares_add_up_to_n_open_and_closed_loop() {
        let shares = |n: u64, count: u32, rate: Option<f64>| -> Vec<u64> {
            (0..count)
                .map(|index| {
                    let mut cfg = BenchConfig::new(target(), get());
                    (cfg.requests, cfg.concurrency, cfg.rate) = (Some(n), count as usize, rate);
                    cfg.shard = Some(Shard { index, count });
                    cfg.part().requests.unwrap()
                })
                .collect()
        };
        for n in [1u64, 4, 10, 999, 1_000_003] {
            for count in [1u32, 2, 3, 4, 7] {
                for rate in [None, Some(1000.0)] {
                    let s = shares(n, count, rate);
                    assert_eq!(s.iter().sum::<u64>(), n, "{n} over {count}, rate {rate:?}");
                }
            }
        }
        assert_eq!(shares(10, 4, Some(100.0)), [3, 3, 2, 2]);
        assert_eq!(shares(10, 4, None), [2, 3, 2, 3]);
    }

    #[test]
    fn regression_an_uneven_split_left_a_shard_more_connections_than_requests() {
        // Both loads run in one process; split, one shard of each got one
        // request more connections than requests and refused to run.
        for (n, c, rate, count) in [(8u64, 7usize, None, 5u32), (5, 5, Some(100.0), 4)] {
            for index in 0..count {
                let mut cfg = BenchConfig::new(target(), get());
                (cfg.requests, cfg.concurrency, cfg.rate) = (Some(n), c, rate);
                cfg.shard = Some(Shard { index, count });
                assert_eq!(
                    cfg.validate(),
                    Ok(()),
                    "-n {n} -c {c} shard {index}/{count}"
                );
                let part = cfg.part();
                let requests = part.requests.unwrap();
                assert!(part.concurrency >= 1 && part.concurrency as u64 <= requests);
            }
        }
    }
}
