//! Drives a `Session` over a blocking socket: the IO loop shared by the
//! iterative, thread-per-connection, thread-pool and prefork models.

use std::io::{self, Read};
use std::net::{Shutdown as NetShutdown, TcpStream};
use std::time::Instant;

use super::handlers::App;
use super::session::Session;
use super::shutdown::{Shutdown, TICK};
use crate::http::{Limits, Phase};

/// Serves one connection until it closes. `others_waiting` tells whether
/// another connection is queued for this worker: then the current one gets
/// `Connection: close` on its next response instead of holding the worker
/// through its keep-alive idle time.
pub fn serve(
    mut stream: TcpStream,
    app: &App,
    limits: &Limits,
    shutdown: &Shutdown,
    others_waiting: &dyn Fn() -> bool,
) {
    let _ = stream.set_nodelay(true);
    // Reads and writes wake at least every TICK so deadlines and shutdown
    // are noticed without a timer thread.
    let _ = stream.set_read_timeout(Some(TICK));
    let _ = stream.set_write_timeout(Some(TICK));
    let mut s = Session::new(limits.clone());
    loop {
        s.process(app);
        if !flush(&mut stream, &mut s) || s.is_done() {
            break;
        }
        if shutdown.is_set() {
            s.close_after_response();
            if s.conn.phase() == Phase::Idle {
                break;
            }
        } else if s.conn.phase() == Phase::Idle && others_waiting() {
            // The next response says `Connection: close`, so the client
            // learns of the close safely instead of racing an idle close.
            s.close_after_response();
        }
        if !s.conn.wants_read() {
            continue;
        }
        match stream.read(s.conn.read_buf()) {
            Ok(0) => s.conn.feed_eof(),
            Ok(n) => {
                s.conn.filled(n);
                s.on_read(Instant::now());
            }
            Err(e) if is_timeout(&e) => {
                let now = Instant::now();
                // An idle keep-alive connection yields its worker at once
                // when another connection is waiting.
                if s.conn.phase() == Phase::Idle && others_waiting() {
                    break;
                }
                if s.deadline(now).is_some_and(|d| now >= d) {
                    s.on_timeout();
                }
            }
            Err(_) => break,
        }
        s.deadline(Instant::now());
    }
    if s.conn.should_linger() {
        let _ = stream.shutdown(NetShutdown::Write);
        drain_before_close(&mut stream);
    }
}

/// Writes all queued output, waiting as long as the peer makes progress.
/// Returns false if the connection is dead.
fn flush(stream: &mut TcpStream, s: &mut Session) -> bool {
    while !s.out.is_empty() {
        let before = s.out.queued();
        match s.out.write_to(stream) {
            Ok(_) if s.out.queued() < before => s.on_write(Instant::now()),
            Err(e) if !is_timeout(&e) => return false,
            _ => {
                let now = Instant::now();
                if s.deadline(now).is_some_and(|d| now >= d) {
                    return false;
                }
            }
        }
    }
    true
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// After an error response the client may still be sending; closing with
/// unread data makes the kernel send RST, which can destroy the response
/// before the client reads it. Read (briefly, boundedly) what is left.
fn drain_before_close(stream: &mut TcpStream) {
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_millis(50)));
    let mut buf = [0u8; 4096];
    for _ in 0..16 {
        match stream.read(&mut buf) {
            Ok(n) if n > 0 => continue,
            _ => break,
        }
    }
}
