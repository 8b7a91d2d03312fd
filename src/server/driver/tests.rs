//! The drive loop over a real socket pair: the order of its work, a
//! turn's end, the peer's EOF.

use super::*;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use crate::http::Limits;
use crate::server::App;

/// The server's end of a socket pair, reading at most `max` bytes a call
/// (to make a turn's reads run out before the input does).
struct Small {
    sock: UnixStream,
    max: usize,
}

impl Socket for Small {
    fn send(&mut self, out: &mut OutQueue, budget: u64) -> io::Result<Wrote> {
        out.write_to(&mut self.sock, budget)
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.max);
        self.sock.read(&mut buf[..n])
    }
}

/// A session, its server socket, the client's end and the app.
fn pair(max: usize) -> (Session, Small, UnixStream, App) {
    let (server, client) = UnixStream::pair().unwrap();
    server.set_nonblocking(true).unwrap();
    let s = Session::new(Limits::default());
    let app = App::new(None, None, 1 << 20).unwrap();
    (s, Small { sock: server, max }, client, app)
}

/// Drives until the pause is not a turn's end; the pauses seen.
fn drive_all(s: &mut Session, sock: &mut Small, lent: &mut Lent, app: &App) -> Vec<Pause> {
    let mut pauses = Vec::new();
    loop {
        let p = drive(s, sock, lent, Instant::now(), false, &mut |s| {
            s.process(app)
        });
        pauses.push(p);
        if p != Pause::Turn {
            return pauses;
        }
    }
}

/// Reads from `client` until it holds `n` responses' heads.
fn responses(client: &mut UnixStream, n: usize) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while String::from_utf8_lossy(&got)
        .matches("HTTP/1.1 200")
        .count()
        < n
    {
        let k = client.read(&mut buf).unwrap();
        assert!(k > 0, "closed after {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..k]);
    }
    String::from_utf8(got).unwrap()
}

#[test]
fn pipelined_requests_are_answered_in_order_then_it_waits_for_input() {
    let (mut s, mut sock, mut client, app) = pair(usize::MAX);
    client
        .write_all(
            b"GET /bytes/3 HTTP/1.1\r\nHost: t\r\n\r\nGET /bytes/5 HTTP/1.1\r\nHost: t\r\n\r\n",
        )
        .unwrap();
    let pauses = drive_all(&mut s, &mut sock, &mut Lent::default(), &app);
    assert_eq!(pauses, vec![Pause::Readable]);
    let got = responses(&mut client, 2);
    let (first, second) = got.split_at(got.rfind("HTTP/1.1 200").unwrap());
    assert!(first.contains("Content-Length: 3"), "{first}");
    assert!(second.contains("Content-Length: 5"), "{second}");
    assert!(s.is_idle());
}

#[test]
fn a_turn_ends_after_its_reads_and_the_next_goes_on() {
    // Ten requests read ten bytes at a time: more reads than a turn has.
    let (mut s, mut sock, mut client, app) = pair(10);
    let request = b"GET /bytes/1 HTTP/1.1\r\nHost: t\r\n\r\n";
    client.write_all(&request.repeat(10)).unwrap();
    let pauses = drive_all(&mut s, &mut sock, &mut Lent::default(), &app);
    let turns = request.len() * 10 / (10 * READS_PER_TURN);
    assert_eq!(pauses.len(), turns + 1, "{pauses:?}");
    assert_eq!(pauses.last(), Some(&Pause::Readable));
    responses(&mut client, 10);
}

#[test]
fn the_peers_eof_between_requests_closes() {
    let (mut s, mut sock, mut client, app) = pair(usize::MAX);
    client
        .write_all(b"GET /bytes/1 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    client.shutdown(std::net::Shutdown::Write).unwrap();
    let pauses = drive_all(&mut s, &mut sock, &mut Lent::none(), &app);
    assert_eq!(pauses, vec![Pause::Close]);
    responses(&mut client, 1);
}
