//! The worker on a real ring with a real socket: a connection that a
//! drive from the touched list touches again is driven again, and a wait
//! for a quiet send that a peer holds up still ends at the tick.

use super::*;
use std::io::{Read, Write};
use std::os::fd::AsFd;

use crate::server::outq::Front;
use crate::server::{App, Model};

/// A body over the echo's limit (1 MiB below): the 413 comes at once and
/// closes the connection with the body unread, so the close lingers.
const UNREAD_BODY: &[u8] =
    b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\npartial";

/// What a worker borrows: its configuration, offload pool and shutdown.
struct Fixture {
    cfg: ServerConfig,
    offload: Offload,
    shutdown: Shutdown,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            cfg: ServerConfig::new(Model::IoUring, App::new(None, None, 1 << 20).unwrap()),
            offload: Offload::start().unwrap(),
            shutdown: Shutdown::new(),
        }
    }

    /// A worker on a real ring. Its own listener is never armed here.
    /// io_uring is on in CI (tests/io_uring.rs asserts the features): a
    /// ring that cannot be built fails here rather than skipping.
    fn worker(&self) -> Worker<'_> {
        let unused = TcpListener::bind("127.0.0.1:0").unwrap();
        Worker::new(unused, &self.cfg, 16, &self.offload, &self.shutdown).expect("io_uring worker")
    }
}

#[test]
fn a_close_that_starts_to_linger_in_the_touched_list_is_driven_again() {
    let f = Fixture::new();
    let (cfg, mut w) = (&f.cfg, f.worker());

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

/// A keep-alive request answered while the peer takes nothing: its send
/// is quiet, and held up in the kernel. A round of nothing but that send
/// waits for two completions; the TICK timeout must still end the wait,
/// or deadlines (this very peer's send timeout) would go unseen for as
/// long as no other event came.
#[test]
fn a_wait_for_a_quiet_send_that_a_peer_holds_up_ends_at_the_tick() {
    let f = Fixture::new();
    let (cfg, mut w) = (&f.cfg, f.worker());

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    client.set_recv_buffer_size(4096).unwrap();
    client
        .connect(&listener.local_addr().unwrap().into())
        .unwrap();
    let client: TcpStream = client.into();
    let (sock, _) = listener.accept().unwrap();
    // The server's side full: what it sends next waits for the peer.
    sock.set_nonblocking(true).unwrap();
    // Filled until it takes nothing more even after what loopback had in
    // flight has landed in the peer's (small) receive buffer.
    let junk = vec![0u8; 64 * 1024];
    let mut took = 1;
    while took > 0 {
        took = 0;
        while let Ok(n) = (&sock).write(&junk) {
            took += n;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    sock.set_nonblocking(false).unwrap();
    let now = Instant::now();
    let session = Session::accepted_at(Arc::clone(&cfg.limits), now);
    let token = w.conns.insert(Conn::new(sock, session, 0));

    // Round 1 arms the connection's receive and the tick, and ends when
    // the tick fires; round 2 (a no-op) arms the tick again and returns at
    // once, so the tick is armed and not yet fired for round 3.
    let ctx = w.env.ctx(now, false);
    assert!(w.conns[token].drive(token, &ctx, &mut w.sqes));
    w.wait().unwrap();
    w.reap(Instant::now(), false);
    w.sqes.push(
        opcode::Nop::new()
            .build()
            .user_data(user_data(Op::Cancel, 0, 0)),
    );
    w.wait().unwrap();
    w.reap(Instant::now(), false);

    // A request, answered with a quiet send and nothing else.
    let ctx = w.env.ctx(Instant::now(), false);
    let c = &mut w.conns[token];
    ctx.serve_lent(
        &mut c.session,
        b"GET /500B.html HTTP/1.1\r\nHost: t\r\n\r\n",
        token,
        0,
    );
    assert!(c.drive(token, &ctx, &mut w.sqes));
    let ops: Vec<Op> = w
        .sqes
        .iter()
        .filter_map(|e| decode(e.get_user_data()))
        .map(|d| d.0)
        .collect();
    assert_eq!(ops, vec![Op::SendQuiet]);

    // Should the wait not end, the peer reads after 3 s, which ends it.
    let mut reader = client.try_clone().unwrap();
    let drain = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(3));
        let mut buf = vec![0u8; 64 * 1024];
        reader
            .set_read_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        while matches!(reader.read(&mut buf), Ok(n) if n > 0) {}
    });
    let t0 = Instant::now();
    w.wait().unwrap();
    let waited = t0.elapsed();
    w.reap(Instant::now(), false);
    assert!(
        waited < Duration::from_millis(1500),
        "waited {waited:?} (a tick is {TICK:?})"
    );
    assert!(w.conns[token].is_sending(), "the send is still held up");
    drain.join().unwrap();
    drop(client);
}
