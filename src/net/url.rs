//! The one URL type: `http[s]://host[:port]/path?query`, parsed and resolved
//! the same way for bench's target, stress's `--url` and the lab's `url:`
//! targets.

use std::net::{SocketAddr, ToSocketAddrs};

/// A parsed and resolved http or https URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// https: the connection speaks TLS (only bench and sweeps do).
    pub tls: bool,
    /// As written; an IPv6 address keeps its brackets.
    pub host: String,
    pub port: u16,
    /// Path and query, as sent on the request line (`/` when none).
    pub path: String,
    pub addr: SocketAddr,
}

/// Why a URL cannot be used. The messages name the URL, so a caller can
/// print one as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Another scheme, or none.
    #[error("invalid URL '{0}': expected http[s]://host[:port]/path")]
    NotHttp(String),
    #[error("invalid URL '{0}': user info is not supported; use -A user:pass")]
    UserInfo(String),
    #[error("invalid URL '{0}': bad host or port")]
    BadHostPort(String),
    #[error("invalid URL '{0}': no host")]
    NoHost(String),
    #[error("invalid URL '{0}': the path has spaces or control characters")]
    BadPath(String),
    /// `why` is ": " and the resolver's error, or empty when it found no
    /// address; `authority` is the host and port as written.
    #[error("cannot resolve '{host}'{why}")]
    Unresolved {
        host: String,
        authority: String,
        why: String,
    },
}

impl HttpUrl {
    /// Parses and resolves an http or https URL.
    pub fn parse(url: &str) -> Result<HttpUrl, UrlError> {
        let lower = url.to_ascii_lowercase();
        let tls = lower.starts_with("https://");
        let skip = if tls { 8 } else { 7 };
        let Some(rest) = url
            .get(skip..)
            .filter(|_| tls || lower.starts_with("http://"))
        else {
            return Err(UrlError::NotHttp(url.into()));
        };
        let default_port = if tls { 443 } else { 80 };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        if authority.contains('@') {
            return Err(UrlError::UserInfo(url.into()));
        }
        let (host, port) = split_host_port(authority, default_port)
            .ok_or_else(|| UrlError::BadHostPort(url.into()))?;
        if host.is_empty() {
            return Err(UrlError::NoHost(url.into()));
        }
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(UrlError::BadPath(url.into()));
        }
        let unresolved = |why: String| UrlError::Unresolved {
            host: host.into(),
            authority: authority.into(),
            why,
        };
        let addr = (host.trim_start_matches('[').trim_end_matches(']'), port)
            .to_socket_addrs()
            .map_err(|e| unresolved(format!(": {e}")))?
            .next()
            .ok_or_else(|| unresolved(String::new()))?;
        Ok(HttpUrl {
            tls,
            host: host.to_string(),
            port,
            path,
            addr,
        })
    }

    /// `http://ADDR/path` for a server known by its address (one loadlab
    /// started, say); nothing to resolve.
    pub fn local(addr: SocketAddr, path: &str) -> HttpUrl {
        let host = match addr {
            SocketAddr::V4(a) => a.ip().to_string(),
            SocketAddr::V6(a) => format!("[{}]", a.ip()),
        };
        HttpUrl {
            tls: false,
            host,
            port: addr.port(),
            path: path.to_string(),
            addr,
        }
    }

    /// `http` or `https`.
    pub fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
    }

    /// The Host header value: the port is left out when it is the
    /// scheme's default.
    pub fn host_header(&self) -> String {
        if self.port == if self.tls { 443 } else { 80 } {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

fn split_host_port(a: &str, default_port: u16) -> Option<(&str, u16)> {
    if let Some(end) = a.strip_prefix('[').and_then(|r| r.find(']')) {
        let host = &a[..end + 2];
        return match &a[end + 2..] {
            "" => Some((host, default_port)),
            p => p.strip_prefix(':')?.parse().ok().map(|p| (host, p)),
        };
    }
    match a.rsplit_once(':') {
        Some((h, p)) => p.parse().ok().filter(|&p| p != 0).map(|p| (h, p)),
        None => Some((a, default_port)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_http_and_https_urls() {
        let t = HttpUrl::parse("http://127.0.0.1:8080/a?b=1").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 8080, "/a?b=1")
        );
        assert_eq!(t.addr, ([127, 0, 0, 1], 8080).into());
        let t = HttpUrl::parse("http://127.0.0.1:9").unwrap();
        assert_eq!(t.path, "/");
        let t = HttpUrl::parse("HTTPS://127.0.0.1/x").unwrap();
        assert!(t.tls);
        assert_eq!(
            (t.port, t.scheme(), t.host_header().as_str()),
            (443, "https", "127.0.0.1")
        );
        let t = HttpUrl::parse("https://127.0.0.1:80/").unwrap();
        assert_eq!(t.host_header(), "127.0.0.1:80", "80 is not https's default");
        assert!(HttpUrl::parse("ftp://x/").is_err());
        assert!(HttpUrl::parse("http://127.0.0.1:99999/").is_err());
        assert!(HttpUrl::parse("127.0.0.1/").is_err());
    }

    #[test]
    fn a_query_without_a_path_gets_one_and_ipv6_keeps_its_brackets() {
        let t = HttpUrl::parse("http://127.0.0.1:9?q=1").unwrap();
        assert_eq!(t.path, "/?q=1");
        let t = HttpUrl::parse("http://[::1]:8080/x").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("[::1]", 8080));
        assert_eq!(t.host_header(), "[::1]:8080");
        assert_eq!(t.addr, "[::1]:8080".parse().unwrap());
        assert_eq!(HttpUrl::local(t.addr, "/x"), t);
    }

    #[test]
    fn the_host_header_leaves_out_the_default_port() {
        assert_eq!(
            HttpUrl::parse("http://127.0.0.1/").unwrap().host_header(),
            "127.0.0.1"
        );
        let local = HttpUrl::local(([127, 0, 0, 1], 4000).into(), "/files/");
        assert_eq!(local.host_header(), "127.0.0.1:4000");
        assert_eq!(local.path, "/files/");
    }

    #[test]
    fn every_refusal_names_what_is_wrong() {
        for (url, want) in [
            ("https://h:0/", UrlError::BadHostPort("https://h:0/".into())),
            ("ftp://x/", UrlError::NotHttp("ftp://x/".into())),
            ("http://u:p@h/", UrlError::UserInfo("http://u:p@h/".into())),
            ("http://h:0/", UrlError::BadHostPort("http://h:0/".into())),
            ("http://h:x/", UrlError::BadHostPort("http://h:x/".into())),
            ("http://:80/", UrlError::NoHost("http://:80/".into())),
            ("http:///x", UrlError::NoHost("http:///x".into())),
            ("http://h/a b", UrlError::BadPath("http://h/a b".into())),
        ] {
            assert_eq!(HttpUrl::parse(url), Err(want), "{url}");
        }
        assert_eq!(
            UrlError::NotHttp("x".into()).to_string(),
            "invalid URL 'x': expected http[s]://host[:port]/path"
        );
        // (No lookup of an unknown name here: without a resolver it can
        // take seconds.)
        let e = UrlError::Unresolved {
            host: "h".into(),
            authority: "h:81".into(),
            why: String::new(),
        };
        assert_eq!(e.to_string(), "cannot resolve 'h'");
    }
}
