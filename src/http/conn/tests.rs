//! Unit tests of the connection state machine's buffer reuse.

use super::*;

/// Regression (a_keep_alive_head_reuses_the_last_heads_buffers): each
/// request head allocated its two buffers anew; a recycled head's are
/// now taken by the next one on the connection.
#[test]
fn a_keep_alive_head_reuses_the_last_heads_buffers() {
    let mut c = ServerConn::new(Limits::default());
    // The second head is the shorter: it fits the first one's buffers.
    c.feed(b"GET /a HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n");
    let Event::Head(first) = c.next_event() else {
        panic!("no first head")
    };
    let (raw, fields) = (first.raw.as_ptr(), first.headers.as_ptr());
    assert!(c.write_head(&mut Vec::new(), 200, 0, b"", false));
    c.recycle(first);
    let Event::Head(second) = c.next_event() else {
        panic!("no second head")
    };
    assert_eq!(second.path(), "/b");
    assert_eq!(
        (second.header("host"), second.header("x-a")),
        (Some(&b"t"[..]), None)
    );
    assert_eq!(
        (second.raw.as_ptr(), second.headers.as_ptr()),
        (raw, fields)
    );
}

/// Regression (peak RSS grew with many connections): a head that closes
/// its connection kept its buffers until the close.
#[test]
fn a_closing_head_leaves_no_spare_buffers() {
    let mut c = ServerConn::new(Limits::default());
    c.feed(b"GET /a HTTP/1.0\r\nHost: t\r\n\r\n");
    let Event::Head(head) = c.next_event() else {
        panic!("no head")
    };
    assert!(!head.keep_alive);
    c.recycle(head);
    assert_eq!((c.spare.0.capacity(), c.spare.1.capacity()), (0, 0));
}

/// A worker's warm buffers lent for one keep-alive request come back to
/// it, reused for the next connection's request, and the connection that
/// borrowed them is left holding none.
#[test]
fn warm_buffers_go_back_to_the_worker_after_a_whole_request() {
    let mut warm = Warm::default();
    let (mut a, mut b) = (
        ServerConn::new(Limits::default()),
        ServerConn::new(Limits::default()),
    );
    let serve = |c: &mut ServerConn, warm: &mut Warm, req: &[u8]| {
        c.swap_warm(warm);
        c.feed(req);
        let Event::Head(head) = c.next_event() else {
            panic!("no head")
        };
        let ptrs = (c.buf.as_ptr(), head.raw.as_ptr(), head.headers.as_ptr());
        assert!(c.write_head(&mut Vec::new(), 200, 0, b"", false));
        c.recycle(head);
        c.swap_warm(warm);
        ptrs
    };
    let first = serve(&mut a, &mut warm, b"GET /a HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        (a.buf.capacity(), a.spare.0.capacity(), a.spare.1.capacity()),
        (0, 0, 0)
    );
    assert_eq!(
        serve(&mut b, &mut warm, b"GET /b HTTP/1.1\r\nHost: t\r\n\r\n"),
        first
    );
}

/// A connection left holding part of a request keeps the buffer it is in,
/// and reads the rest of it into the same.
#[test]
fn a_partial_request_keeps_the_lent_receive_buffer() {
    let mut warm = Warm::default();
    let mut c = ServerConn::new(Limits::default());
    c.swap_warm(&mut warm);
    c.feed(b"GET /a HTTP/1.1\r\nHo");
    assert_eq!(c.next_event(), Event::NeedData);
    c.swap_warm(&mut warm);
    assert_eq!(c.buffered(), 19);
    c.feed(b"st: t\r\n\r\n");
    let Event::Head(head) = c.next_event() else {
        panic!("no head")
    };
    assert_eq!((head.path(), head.header("host")), ("/a", Some(&b"t"[..])));
}
