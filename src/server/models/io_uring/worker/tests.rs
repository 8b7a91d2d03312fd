//! The worker on a real ring with a real socket: a connection that a
//! drive from the touched list touches again is driven again; a wait for
//! a quiet send that a peer holds up still ends at the next tick; and a
//! quiet send's round whose connection got more to do is not quiet.

use super::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::sync::Arc;

use crate::server::outq::Front;
use crate::server::session::Session;
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
        let w = Worker::new(unused, &self.cfg, 16, &self.offload, &self.shutdown)
            .expect("io_uring worker");
        // Quiet sends need Linux 6.4+; CI and this machine run 6.18
        // (tests/io_uring.rs asserts the start-up line lists them).
        assert!(w.features.quiet_sends, "quiet sends off: Linux < 6.4?");
        w
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
        c.on_recv(Some(UNREAD_BODY), 0, true, &ctx, token);
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
    assert!(c.linger.is_some(), "the close lingers");
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

/// The ops that user_data values name.
fn ops(user_data: impl Iterator<Item = u64>) -> Vec<Op> {
    user_data.filter_map(decode).map(|d| d.0).collect()
}

/// A connection whose peer reads nothing and whose socket is full, with a
/// keep-alive request answered: its response is one quiet send.
fn quiet_send_held_up(w: &mut Worker<'_>, cfg: &ServerConfig) -> (usize, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    client.set_recv_buffer_size(4096).unwrap();
    let addr = listener.local_addr().unwrap().into();
    client.connect(&addr).unwrap();
    let (sock, _) = listener.accept().unwrap();
    // Nonblocking, as the model accepts them; filled until it takes
    // nothing more even after what loopback had in flight has landed in
    // the peer's (small) receive buffer.
    sock.set_nonblocking(true).unwrap();
    let junk = vec![0u8; 64 * 1024];
    let mut took = 1;
    while took > 0 {
        took = 0;
        while let Ok(n) = (&sock).write(&junk) {
            took += n;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let now = Instant::now();
    let session = Session::accepted_at(Arc::clone(&cfg.limits), now);
    let token = w.conns.insert(Conn::new(sock, session, 0));
    let ctx = w.env.ctx(now, false);
    let c = &mut w.conns[token];
    assert!(c.drive(token, &ctx, &mut w.sqes), "arms the receive");
    let request = b"GET /500B.html HTTP/1.1\r\nHost: t\r\n\r\n";
    c.on_recv(Some(request), 0, true, &ctx, token);
    assert!(c.drive(token, &ctx, &mut w.sqes));
    let queued = ops(w.sqes.iter().map(|e| e.get_user_data()));
    assert_eq!(queued, vec![Op::Recv, Op::SendQuiet]);
    (token, client.into())
}

/// A keep-alive request answered while the peer takes nothing: its send
/// is quiet, and held up in the kernel. A round of nothing but such sends
/// waits for two completions; the TICK timeout must still end the wait,
/// or deadlines (this very peer's send timeout) would go unseen for as
/// long as no other event came. Here the tick fires just before the wait
/// begins, which does not end it (the kernel counts only timeouts that
/// fire during a wait): the next fire must.
#[test]
fn a_wait_for_a_quiet_send_that_a_peer_holds_up_ends_at_the_next_tick() {
    static MORE: [u8; 500] = [b'x'; 500];
    let f = Fixture::new();
    let (cfg, mut w) = (&f.cfg, f.worker());
    let (token, client) = quiet_send_held_up(&mut w, cfg);

    // Round 1 submits the receive, the send and the tick; a no-op ends
    // it at once, the tick armed and not yet fired.
    w.sqes.push(
        opcode::Nop::new()
            .build()
            .user_data(user_data(Op::Cancel, 0, 0)),
    );
    w.wait().unwrap();
    w.reap(Instant::now(), false);
    assert!(w.conns[token].is_sending(), "the send is held up");
    // The tick fires now, while the worker is busy elsewhere.
    std::thread::sleep(TICK * 3 / 2);

    // Round 2: one more quiet send on the full socket, and nothing else.
    let fd = types::Fd(w.conns[token].sock.as_raw_fd());
    w.sqes.push(
        opcode::Send::new(fd, MORE.as_ptr(), MORE.len() as u32)
            .build()
            .user_data(user_data(Op::SendQuiet, token, 0)),
    );
    assert_eq!(w.completions_to_wait_for(), 2);

    // Should the wait not end, the peer reads after 3 s, which ends it.
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let mut reader = client.try_clone().unwrap();
    let drain = std::thread::spawn(move || {
        if stopped.recv_timeout(Duration::from_secs(3)).is_ok() {
            return;
        }
        let mut buf = vec![0u8; 64 * 1024];
        reader
            .set_read_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        while matches!(reader.read(&mut buf), Ok(n) if n > 0) {}
    });
    let t0 = Instant::now();
    w.wait().unwrap();
    let waited = t0.elapsed();
    let _ = stop.send(());
    drain.join().unwrap();
    // What ended the wait: ticks (the one fired before it, posted as it
    // began, and the next), not a send (which would mean none was held up
    // and the test proved nothing).
    let ended = ops(w.ring.completion().map(|c| c.user_data()));
    assert!(
        waited < Duration::from_millis(1500),
        "waited {waited:?} (a tick is {TICK:?}); completions {ended:?}"
    );
    assert!(!ended.contains(&Op::SendQuiet), "{ended:?}");
    assert!(
        ended.iter().filter(|&&op| op == Op::Tick).count() >= 2,
        "{ended:?}"
    );
}

/// A quiet send's connection that gets EOF or input later in the same
/// round has something to do when the send completes: that round waits
/// for one completion, not two, so the close or the next response is not
/// put off.
#[test]
fn a_quiet_send_whose_connection_gets_eof_or_input_in_the_same_round_is_waited_for() {
    let f = Fixture::new();
    for input in [None, Some(&b"GET / HTTP/1.1\r\n"[..])] {
        let (cfg, mut w) = (&f.cfg, f.worker());
        let (token, _client) = quiet_send_held_up(&mut w, cfg);
        w.sqes
            .retain(|e| decode(e.get_user_data()).is_some_and(|d| d.0 == Op::SendQuiet));
        assert_eq!(w.completions_to_wait_for(), 2);
        let ctx = w.env.ctx(Instant::now(), false);
        let res = input.map_or(0, |d| d.len() as i32);
        w.conns[token].on_recv(input, res, input.is_some(), &ctx, token);
        assert_eq!(w.completions_to_wait_for(), 1, "after {input:?}");
    }
}
