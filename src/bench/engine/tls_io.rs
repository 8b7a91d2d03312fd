//! TLS over the engine's nonblocking sockets: the handshake as a phase of
//! connecting (so ab's Connect time includes it), and reads and writes
//! that go through rustls when the run is https and straight to the
//! socket when it is not. Every function returns WouldBlock only once the
//! socket itself did, so edge-triggered polling stays correct.

use std::io::{self, Read, Write};

use mio::net::TcpStream;
use rustls::ClientConnection;

use super::{Failure, Worker};
use crate::net::tls::TlsSession;

/// Writes `buf` (plaintext, encrypted first under TLS); like a socket
/// write, it may take part of it.
pub(super) fn write(
    tcp: &mut TcpStream,
    tls: Option<&mut ClientConnection>,
    buf: &[u8],
) -> io::Result<usize> {
    let Some(t) = tls else {
        return tcp.write(buf);
    };
    // Records still queued go first: a full socket refuses more now.
    flush_tls(tcp, t)?;
    let n = t.writer().write(buf)?;
    if n == 0 && !buf.is_empty() {
        return Err(io::ErrorKind::WouldBlock.into());
    }
    // Taken in: what the socket has no room for now goes out from
    // `flush`, which the sender calls before it stops sending.
    match flush_tls(tcp, t) {
        Err(e) if e.kind() != io::ErrorKind::WouldBlock => Err(e),
        _ => Ok(n),
    }
}

/// Pushes out what rustls still holds; WouldBlock while any remains.
pub(super) fn flush(tcp: &mut TcpStream, tls: Option<&mut ClientConnection>) -> io::Result<()> {
    match tls {
        Some(t) => flush_tls(tcp, t),
        None => Ok(()),
    }
}

fn flush_tls(tcp: &mut TcpStream, t: &mut ClientConnection) -> io::Result<()> {
    while t.wants_write() {
        if t.write_tls(tcp)? == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
    }
    Ok(())
}

/// Reads plaintext into `buf`; Ok(0) at the end of the stream (a
/// close_notify or the server closing the socket).
pub(super) fn read(
    tcp: &mut TcpStream,
    tls: Option<&mut ClientConnection>,
    buf: &mut [u8],
) -> io::Result<usize> {
    let Some(t) = tls else {
        return tcp.read(buf);
    };
    loop {
        match t.reader().read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // Closed without close_notify: HTTP/1.0 framing by close
            // makes that an end like any other; the parser decides.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
            Err(e) => return Err(e),
        }
        if t.read_tls(tcp)? == 0 {
            return Ok(0);
        }
        if let Err(e) = t.process_new_packets() {
            // Tell the server why (the alert), then report it.
            let _ = flush_tls(tcp, t);
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("TLS: {e}"),
            ));
        }
    }
}

/// Moves the handshake on: Ok(true) once done, Ok(false) while it waits
/// for the socket, Err with the reason (one line) when it failed.
fn drive(tcp: &mut TcpStream, t: &mut ClientConnection) -> Result<bool, String> {
    loop {
        match flush_tls(tcp, t) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(format!("TLS handshake: {e}")),
        }
        if !t.is_handshaking() {
            return Ok(true);
        }
        match t.read_tls(tcp) {
            Ok(0) => return Err("TLS handshake: connection closed by the server".into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("TLS handshake: {e}")),
        }
        if let Err(e) = t.process_new_packets() {
            let _ = flush_tls(tcp, t);
            return Err(format!("TLS handshake: {e}"));
        }
    }
}

impl Worker<'_> {
    /// Starts the TLS session on `i`'s fresh TCP connection.
    pub(super) fn start_tls(&mut self, i: usize) {
        let Some(client) = self.shared.tls.as_ref() else {
            return self.connected(i);
        };
        match client.connect() {
            Ok(t) => {
                let c = &mut self.conns[i];
                c.tls = Some(Box::new(t));
                c.phase = super::Phase::Handshaking;
                self.handshake(i);
            }
            Err(e) => self.fail(i, Failure::Connect, format!("TLS: {e}")),
        }
    }

    /// Moves `i`'s handshake on; once done, the request goes out.
    pub(super) fn handshake(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let (Some(tcp), Some(t)) = (c.stream.as_mut(), c.tls.as_deref_mut()) else {
            return;
        };
        match drive(tcp, t) {
            Ok(false) => {
                c.t_active = self.woke;
            }
            Ok(true) => {
                if self.stats.tls.is_none() {
                    let sni = self.shared.tls.as_ref().and_then(|t| t.sni.as_deref());
                    self.stats.tls = TlsSession::of(t, sni);
                }
                self.connected(i);
            }
            Err(msg) => self.fail(i, Failure::Connect, msg),
        }
    }
}
