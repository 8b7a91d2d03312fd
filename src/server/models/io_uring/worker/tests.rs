//! The worker's touched list, driven on a real ring with a real socket:
//! a connection that a drive from the list touches again is driven again.

use super::*;
use std::os::fd::AsFd;

use crate::server::outq::Front;
use crate::server::{App, Model};

/// A body over the echo's limit (1 MiB below): the 413 comes at once and
/// closes the connection with the body unread, so the close lingers.
const UNREAD_BODY: &[u8] =
    b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\npartial";

#[test]
fn a_close_that_starts_to_linger_in_the_touched_list_is_driven_again() {
    let cfg = ServerConfig::new(Model::IoUring, App::new(None, None, 1 << 20).unwrap());
    let offload = Offload::start().unwrap();
    let shutdown = Shutdown::new();
    // The worker's own listener, never armed here.
    let unused = TcpListener::bind("127.0.0.1:0").unwrap();
    // io_uring is on in CI (tests/io_uring.rs asserts the features): a
    // ring that cannot be built fails here rather than skipping.
    let mut w = Worker::new(unused, &cfg, 16, &offload, &shutdown).expect("io_uring worker");

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (sock, _) = listener.accept().unwrap();
    let now = Instant::now();
    let session = Session::accepted_at(Arc::clone(&cfg.limits), now);
    let token = w.conns.insert(Conn::new(sock, session, 0));

    // The request is answered, and the answer sent: what is left is the
    // close, with the rest of the body unread.
    {
        let ctx = w.env.ctx(now, false);
        let c = &mut w.conns[token];
        ctx.serve_lent(&mut c.session, UNREAD_BODY, token, 0);
        let fd = c.sock.as_fd();
        while let Some(Front::Bytes { buf, .. }) = c.session.out.front(fd) {
            let n = buf.len();
            c.session.out.advance(n, fd).unwrap();
        }
        assert!(c.session.out.is_empty());
        assert!(c.session.is_done() && c.session.conn.should_linger());
    }

    // Driven from the list, the drive ends in a close that lingers and
    // touches the connection again.
    w.touch(token);
    w.drive_touched(now, false);

    let c = &w.conns[token];
    assert!(c.linger_until.is_some(), "the close lingers");
    assert!(
        !c.touched,
        "its flag is cleared by a second drive, not left set"
    );
    assert!(w.touched.is_empty());
    assert!(
        c.in_flight(),
        "the second drive armed the receive that reads what the peer still sends"
    );
    // Its next touch queues it again (a set flag would have refused it).
    w.touch(token);
    assert_eq!(w.touched, vec![token]);
}
