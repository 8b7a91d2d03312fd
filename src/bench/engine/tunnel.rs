//! https through an http proxy (ab's -X): every new connection first asks
//! the proxy for a tunnel to the server (CONNECT) and reads its answer;
//! TLS then starts inside the tunnel. Like the handshake, it is part of
//! the Connect time.

use std::io::{self, Read, Write};

use super::{Failure, Phase, Worker};

/// Longest proxy answer to CONNECT accepted (status line and headers).
const TUNNEL_REPLY_LIMIT: usize = 8 * 1024;

/// The status code on a reply's first line, e.g. 200 in
/// `HTTP/1.1 200 Connection established`.
fn status_of(reply: &[u8]) -> Option<u16> {
    let line = reply.split(|&b| b == b'\r').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split(' ');
    words.next().filter(|v| v.starts_with("HTTP/1."))?;
    words.next()?.parse().ok()
}

impl Worker<'_> {
    /// TCP is up: TLS starts, after a tunnel when going through a proxy.
    pub(super) fn after_tcp(&mut self, i: usize) {
        let Some(req) = self.shared.tunnel.as_ref() else {
            return self.start_tls(i);
        };
        let c = &mut self.conns[i];
        let Some(s) = c.stream.as_mut() else { return };
        // A few dozen bytes: a fresh socket's buffer takes them whole.
        match s.write(req) {
            Ok(n) if n == req.len() => {}
            Ok(_) => {
                let msg = "proxy: CONNECT request cut short".into();
                return self.fail(i, Failure::Connect, msg);
            }
            Err(e) => return self.fail(i, Failure::Connect, format!("proxy: {e}")),
        }
        c.tunnel_reply.clear();
        c.phase = Phase::Tunneling;
        c.t_active = self.woke;
        self.tunnel_read(i);
    }

    /// Reads the proxy's answer to CONNECT; a 2xx opens the tunnel.
    pub(super) fn tunnel_read(&mut self, i: usize) {
        loop {
            let c = &mut self.conns[i];
            let Some(s) = c.stream.as_mut() else { return };
            let n = match s.read(&mut self.buf) {
                Ok(0) => {
                    let msg = "proxy: connection closed before it answered CONNECT".into();
                    return self.fail(i, Failure::Connect, msg);
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.fail(i, Failure::Connect, format!("proxy: {e}")),
            };
            c.t_active = self.woke;
            c.tunnel_reply.extend_from_slice(&self.buf[..n]);
            let reply = &c.tunnel_reply;
            let Some(end) = reply.windows(4).position(|w| w == b"\r\n\r\n") else {
                if reply.len() > TUNNEL_REPLY_LIMIT {
                    let msg = "proxy: answer to CONNECT too long".into();
                    return self.fail(i, Failure::Connect, msg);
                }
                continue;
            };
            let status = status_of(reply);
            // The server speaks first in no TLS version: bytes past the
            // answer are the proxy's mistake, and would be lost to TLS.
            let extra = end + 4 < reply.len();
            c.tunnel_reply = Vec::new();
            return match status {
                Some(200..=299) if !extra => self.start_tls(i),
                Some(200..=299) => {
                    let msg = "proxy: bytes after its answer to CONNECT".into();
                    self.fail(i, Failure::Connect, msg)
                }
                Some(code) => {
                    let msg = format!("proxy: CONNECT refused with status {code}");
                    self.fail(i, Failure::Connect, msg)
                }
                None => {
                    let msg = "proxy: malformed answer to CONNECT".into();
                    self.fail(i, Failure::Connect, msg)
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::status_of;

    #[test]
    fn the_status_of_a_proxy_answer_is_read_from_its_first_line() {
        assert_eq!(
            status_of(b"HTTP/1.1 200 Connection established\r\n\r\n"),
            Some(200)
        );
        assert_eq!(status_of(b"HTTP/1.0 407 Auth\r\n\r\n"), Some(407));
        assert_eq!(status_of(b"SSH-2.0\r\n\r\n"), None);
    }
}
