//! Outgoing bytes of one connection: response heads and small bodies
//! coalesced into one buffer (one write per batch of pipelined responses),
//! large bodies as separate segments, files sent with sendfile.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use bytes::Bytes;

/// Bodies up to this size are copied next to their head so a response
/// leaves in a single write.
const COALESCE_MAX: usize = 16 * 1024;
/// Stop decoding pipelined requests once this much output is queued.
const HIGH_WATER: usize = 256 * 1024;
/// Largest drained buffer kept for reuse; one grown for a burst is freed.
const POOL_BUF_MAX: usize = 64 * 1024;
/// Most bytes of drained buffers one thread keeps: room for a batch of
/// small responses in flight (io_uring's sends complete a round later),
/// bounded so a burst is not held for good.
const POOL_BYTES_MAX: usize = 1024 * 1024;

thread_local! {
    /// Drained buffers of this thread's connections and their total
    /// capacity, most recent last: the next response reuses a buffer still
    /// in cache, where one kept per connection would long have left it.
    static POOL: RefCell<(Vec<Vec<u8>>, usize)> = const { RefCell::new((Vec::new(), 0)) };
}

/// A drained buffer from this thread's pool, or a new empty one.
fn pooled_buf() -> Vec<u8> {
    POOL.try_with(|p| {
        let mut p = p.borrow_mut();
        let b = p.0.pop().unwrap_or_default();
        p.1 -= b.capacity();
        b
    })
    .unwrap_or_default()
}

/// Gives a drained buffer back to this thread's pool, or frees it.
fn recycle_buf(mut b: Vec<u8>) {
    if b.capacity() > POOL_BUF_MAX {
        return;
    }
    b.clear();
    // A thread being torn down has no pool left: the buffer is freed.
    let _ = POOL.try_with(|p| {
        let mut p = p.borrow_mut();
        if p.1 + b.capacity() <= POOL_BYTES_MAX {
            p.1 += b.capacity();
            p.0.push(b);
        }
    });
}
/// Files at least this large go out corked (TCP_CORK) with their head, so
/// full segments leave despite TCP_NODELAY (nginx's `tcp_nopush`).
const CORK_MIN: u64 = 64 * 1024;
/// Most bytes one sendfile call may move: on a blocking socket one call to
/// a slow but steady reader could otherwise outlast the shutdown grace.
const SENDFILE_CHUNK: u64 = 2 * 1024 * 1024;

/// Most bytes one connection writes per turn before the others on its
/// thread get theirs, so a fast reader of a large file cannot hold it.
pub const WRITE_BUDGET: u64 = 512 * 1024;

/// What a turn of `OutQueue::write_to` left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrote {
    /// Everything queued is written.
    All,
    /// The socket is full: wait until it is writable.
    Blocked,
    /// The turn's budget is spent while the socket still takes more:
    /// serve the others, then write again without waiting for readiness.
    Budget,
}

/// What one write call did.
enum Step {
    All,
    Moved(u64),
    Blocked,
    Interrupted,
}

#[derive(Debug)]
enum Seg {
    Buf(Vec<u8>),
    Bytes(Bytes),
    File { file: File, offset: u64, end: u64 },
}

/// The next piece of output (see `OutQueue::front`).
pub enum Front<'a> {
    /// Bytes to send; `more`: the connection's last output, to be sent
    /// with MSG_MORE so its FIN shares the final segment.
    Bytes { buf: &'a [u8], more: bool },
    /// `len` bytes of `file` from `offset`, for sendfile or splice.
    File {
        file: BorrowedFd<'a>,
        offset: u64,
        len: u64,
    },
}

#[derive(Debug, Default)]
pub struct OutQueue {
    segs: VecDeque<Seg>,
    /// Bytes already written from the front segment (Buf and Bytes).
    front_pos: usize,
    queued: u64,
    /// A large file is queued: cork the socket before writing.
    cork_wanted: bool,
    /// The socket is corked; uncork once everything is written.
    corked: bool,
    /// Nothing follows this output: the connection closes (`set_last`).
    last: bool,
}

impl OutQueue {
    /// Bytes still to be written.
    pub fn queued(&self) -> u64 {
        self.queued
    }

    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Whether the front segment is all there is, and writing it leaves
    /// nothing to do: no cork to lift, not the connection's last output.
    pub fn settles_with_front(&self) -> bool {
        self.segs.len() == 1 && !self.cork_wanted && !self.corked && !self.last
    }

    /// Enough is queued that decoding more requests should wait.
    pub fn is_full(&self) -> bool {
        self.queued as usize >= HIGH_WATER
            || self.segs.iter().any(|s| matches!(s, Seg::File { .. }))
    }

    /// Encodes with `f` into the tail buffer (so heads and small bodies of
    /// pipelined responses share one write), counting what it added.
    pub fn encode<R>(&mut self, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        let buf = self.tail_buf();
        let before = buf.len();
        let r = f(buf);
        let added = buf.len() - before;
        self.queued += added as u64;
        r
    }

    /// The tail buffer, made the last segment if it is not.
    fn tail_buf(&mut self) -> &mut Vec<u8> {
        if !matches!(self.segs.back(), Some(Seg::Buf(_))) {
            self.segs.push_back(Seg::Buf(pooled_buf()));
        }
        match self.segs.back_mut() {
            Some(Seg::Buf(b)) => b,
            _ => unreachable!("a Buf segment was just ensured"),
        }
    }

    /// Recomputes the queued byte count from the segments.
    fn recount(&mut self) {
        self.queued = self
            .segs
            .iter()
            .map(|s| match s {
                Seg::Buf(b) => b.len() as u64,
                Seg::Bytes(b) => b.len() as u64,
                Seg::File { offset, end, .. } => end - offset,
            })
            .sum::<u64>()
            - self.front_pos as u64;
    }

    /// A response's head, encoded by `f` into room for `head_max` bytes,
    /// and its body `b`; a small body shares that one reservation rather
    /// than growing the buffer twice.
    pub fn push_head_and_bytes<R>(
        &mut self,
        head_max: usize,
        f: impl FnOnce(&mut Vec<u8>) -> R,
        b: Bytes,
    ) -> R {
        let inline = b.len() <= COALESCE_MAX;
        let r = self.encode(|buf| {
            buf.reserve(head_max + if inline { b.len() } else { 0 });
            let r = f(buf);
            if inline {
                buf.extend_from_slice(&b);
            }
            r
        });
        if !inline {
            self.push_bytes(b); // too large to copy: its own segment
        }
        r
    }

    pub fn push_bytes(&mut self, b: Bytes) {
        if b.len() <= COALESCE_MAX {
            self.encode(|buf| buf.extend_from_slice(&b));
        } else {
            self.queued += b.len() as u64;
            self.segs.push_back(Seg::Bytes(b));
        }
    }

    /// `len` bytes of `unit` repeated from `offset` into it, as slices of
    /// `unit` (no copy): one segment per repetition.
    pub fn push_repeated(&mut self, unit: &Bytes, offset: u64, len: u64) {
        if unit.is_empty() {
            return;
        }
        let mut pos = (offset % unit.len() as u64) as usize;
        let mut left = len;
        while left > 0 {
            let n = (unit.len() - pos).min(usize::try_from(left).unwrap_or(usize::MAX));
            self.push_bytes(unit.slice(pos..pos + n));
            left -= n as u64;
            pos = 0;
        }
    }

    pub fn push_file(&mut self, file: File, offset: u64, len: u64) {
        self.cork_wanted |= len >= CORK_MIN;
        if len > 0 {
            self.segs.push_back(Seg::File {
                file,
                offset,
                end: offset + len,
            });
        }
        self.recount();
    }

    /// Marks the queued output as the connection's last: its final piece is
    /// held back (MSG_MORE, or the cork left on) so the close's FIN shares
    /// its segment. Callers must close (or shut down writing) once the queue
    /// drains, which is what sends the held bytes.
    pub fn set_last(&mut self) {
        self.last = true;
    }

    /// Writes what the socket takes, up to `budget` bytes: `All`, `Blocked`
    /// on WouldBlock, or `Budget`; other errors (a file that shrank) end the
    /// connection. Edge-triggered loops stall unless writes reach
    /// WouldBlock, so on `Budget` come back without waiting for readiness.
    pub fn write_to<S: Write + AsFd>(&mut self, sock: &mut S, budget: u64) -> io::Result<Wrote> {
        let mut left = budget;
        loop {
            if left == 0 {
                return Ok(Wrote::Budget);
            }
            match self.write_some(sock, left)? {
                Step::All => return Ok(Wrote::All),
                Step::Moved(n) => left = left.saturating_sub(n),
                Step::Blocked => return Ok(Wrote::Blocked),
                Step::Interrupted => {}
            }
        }
    }

    /// One write or sendfile call: Some(true) when everything is written,
    /// Some(false) with more queued, None on WouldBlock. For blocking
    /// sockets, so the caller sees shutdown and deadlines between calls.
    pub fn write_once<S: Write + AsFd>(&mut self, sock: &mut S) -> io::Result<Option<bool>> {
        Ok(match self.write_some(sock, u64::MAX)? {
            Step::All => Some(true),
            Step::Moved(_) | Step::Interrupted => Some(false),
            Step::Blocked => None,
        })
    }

    /// One write or sendfile call of at most `max` bytes.
    fn write_some<S: Write + AsFd>(&mut self, sock: &mut S, max: u64) -> io::Result<Step> {
        let cap = |len: usize| len.min(usize::try_from(max).unwrap_or(usize::MAX));
        let r = match self.front(sock.as_fd()) {
            None => return Ok(Step::All),
            Some(Front::Bytes { buf, more: true }) => {
                send_more(sock.as_fd(), &buf[..cap(buf.len())])
            }
            Some(Front::Bytes { buf, more: false }) => sock.write(&buf[..cap(buf.len())]),
            Some(Front::File { file, offset, len }) => {
                let mut off = offset as libc::off_t;
                let count = len.min(SENDFILE_CHUNK).min(max) as usize;
                nix::sys::sendfile::sendfile(sock.as_fd(), file, Some(&mut off), count)
                    .map_err(io::Error::from)
            }
        };
        match r {
            Ok(n) => Ok(match self.advance(n, sock.as_fd())? {
                true => Step::All,
                false => Step::Moved(n as u64),
            }),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.recount();
                Ok(Step::Blocked)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(Step::Interrupted),
            Err(e) => Err(e),
        }
    }

    /// What goes out next, for a model that sends it itself (io_uring);
    /// None once all is written. Corks first if a large file is queued. A
    /// `Bytes` slice stays put until `advance` or the next `encode`/`push_*`,
    /// so queue nothing while its send is in flight.
    pub fn front(&mut self, sock: BorrowedFd<'_>) -> Option<Front<'_>> {
        if self.cork_wanted && !self.corked {
            self.corked = set_cork(sock, true);
        }
        // Hold every piece of the last output, so parts queued apart
        // still share segments.
        let more = self.last;
        if self.segs.is_empty() {
            self.all_written(sock);
            return None;
        }
        Some(match self.segs.front()? {
            Seg::Buf(b) => Front::Bytes {
                buf: &b[self.front_pos..],
                more,
            },
            Seg::Bytes(b) => Front::Bytes {
                buf: &b[self.front_pos..],
                more,
            },
            Seg::File { file, offset, end } => Front::File {
                file: file.as_fd(),
                offset: *offset,
                len: end - offset,
            },
        })
    }

    /// `n` bytes of the front (as `front` gave it) went out. Ok(true) when
    /// everything is written; an error when nothing moved (a file that
    /// shrank, a socket that took nothing).
    pub fn advance(&mut self, n: usize, sock: BorrowedFd<'_>) -> io::Result<bool> {
        let Some(seg) = self.segs.front_mut() else {
            return Ok(true);
        };
        if n == 0 {
            return Err(match seg {
                Seg::File { .. } => {
                    io::Error::new(io::ErrorKind::UnexpectedEof, "file shrank while being sent")
                }
                _ => io::ErrorKind::WriteZero.into(),
            });
        }
        // Kept exact as bytes go out, so callers see progress.
        self.queued = self.queued.saturating_sub(n as u64);
        let done = match seg {
            Seg::Buf(b) => {
                self.front_pos += n;
                self.front_pos >= b.len()
            }
            Seg::Bytes(b) => {
                self.front_pos += n;
                self.front_pos >= b.len()
            }
            Seg::File { offset, end, .. } => {
                *offset += n as u64;
                offset >= end
            }
        };
        if done {
            if let Some(Seg::Buf(b)) = self.segs.pop_front() {
                recycle_buf(b);
            }
            self.front_pos = 0;
        }
        if self.segs.is_empty() {
            self.all_written(sock);
            return Ok(true);
        }
        Ok(false)
    }

    /// Everything is out: uncorking sends the last partial segment now.
    fn all_written(&mut self, fd: BorrowedFd<'_>) {
        self.queued = 0;
        self.cork_wanted = false;
        // The last output stays corked: the close sends it with its FIN.
        if self.corked && !self.last {
            set_cork(fd, false);
            self.corked = false;
        }
    }
}

/// One send with MSG_MORE: the kernel keeps a partial segment back until
/// more data or a FIN comes. MSG_NOSIGNAL as std's own writes use.
fn send_more(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: fd is a live descriptor borrowed for the call, and the pointer
    // and length describe `buf`, which outlives it.
    let n = unsafe {
        libc::send(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_MORE | libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Sets TCP_CORK; false where it does not apply (not a TCP socket).
fn set_cork(fd: BorrowedFd<'_>, on: bool) -> bool {
    socket2::SockRef::from(&fd).set_cork(on).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    /// A fast reader's response held its thread until the socket was full:
    /// a turn now ends at its budget, with the rest still queued, and the
    /// next turn goes on where it stopped.
    #[test]
    fn a_turn_stops_at_its_budget_while_the_socket_takes_more() {
        let (mut a, _b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let mut q = OutQueue::default();
        let unit = Bytes::from(vec![7u8; 20 * 1024]);
        q.push_repeated(&unit, 0, 1 << 20);
        let budget = 50 * 1024; // well under the socket's buffer
        assert_eq!(q.write_to(&mut a, budget).unwrap(), Wrote::Budget);
        assert_eq!(q.queued(), (1 << 20) - budget);
        assert_eq!(q.write_to(&mut a, budget).unwrap(), Wrote::Budget);
        assert_eq!(q.queued(), (1 << 20) - 2 * budget);
        // Without a budget it writes until the socket is full.
        assert_eq!(q.write_to(&mut a, u64::MAX).unwrap(), Wrote::Blocked);
    }

    /// A head and a small body leave as one piece from one allocation
    /// made for both; a body over COALESCE_MAX follows as its own
    /// segment, uncopied. Either way every byte is counted as queued.
    #[test]
    fn a_head_and_its_body_are_queued_together_when_small() {
        let (a, _b) = UnixStream::pair().unwrap();
        let head = |buf: &mut Vec<u8>| buf.extend_from_slice(b"HEAD\r\n\r\n");
        let mut q = OutQueue::default();
        q.push_head_and_bytes(64, head, Bytes::from_static(b"body"));
        assert_eq!(q.queued(), 12);
        match q.front(a.as_fd()) {
            Some(Front::Bytes { buf, .. }) => assert_eq!(buf, b"HEAD\r\n\r\nbody"),
            _ => panic!("one piece of bytes expected"),
        }
        match q.segs.front() {
            Some(Seg::Buf(b)) => assert!(b.capacity() >= 64 + 4),
            other => panic!("a buffer segment expected, got {other:?}"),
        }

        let big = Bytes::from(vec![1u8; COALESCE_MAX + 1]);
        let mut q = OutQueue::default();
        q.push_head_and_bytes(64, head, big.clone());
        assert_eq!(q.queued(), 8 + big.len() as u64);
        assert_eq!(q.segs.len(), 2);
        assert!(matches!(q.segs.back(), Some(Seg::Bytes(b)) if b.as_ptr() == big.as_ptr()));
    }

    /// The buffer a written response leaves is the one the thread's next
    /// response, on any connection, is encoded into (still cached); one
    /// grown past POOL_BUF_MAX is freed, and the pool keeps at most
    /// POOL_BYTES_MAX of buffers.
    #[test]
    fn the_next_response_reuses_the_buffer_the_last_one_left() {
        // A thread of its own: its pool starts empty.
        std::thread::spawn(|| {
            let (mut a, mut b) = UnixStream::pair().unwrap();
            let tail_ptr = |q: &OutQueue| match q.segs.back() {
                Some(Seg::Buf(buf)) => buf.as_ptr(),
                other => panic!("a buffer segment expected, got {other:?}"),
            };
            let mut first = OutQueue::default();
            first.encode(|buf| buf.extend_from_slice(&[1u8; 700]));
            let used = tail_ptr(&first);
            assert_eq!(first.write_to(&mut a, u64::MAX).unwrap(), Wrote::All);
            let mut got = [0u8; 700];
            io::Read::read_exact(&mut b, &mut got).unwrap();
            assert_eq!(got, [1u8; 700]);
            let mut second = OutQueue::default();
            second.encode(|buf| buf.extend_from_slice(b"next"));
            assert_eq!(tail_ptr(&second), used);
            assert_eq!(second.queued(), 4);

            // Too large to keep: the next queue gets a new buffer.
            let mut big = OutQueue::default();
            big.encode(|buf| buf.resize(POOL_BUF_MAX + 1, 2));
            let big_ptr = tail_ptr(&big);
            let mut sink = vec![0u8; POOL_BUF_MAX + 1];
            let reader = std::thread::spawn(move || {
                io::Read::read_exact(&mut b, &mut sink).unwrap();
            });
            a.set_nonblocking(false).unwrap();
            assert_eq!(big.write_to(&mut a, u64::MAX).unwrap(), Wrote::All);
            reader.join().unwrap();
            POOL.with(|p| assert!(p.borrow().0.iter().all(|v| v.as_ptr() != big_ptr)));

            // Bounded: buffers past POOL_BYTES_MAX are freed, not pooled.
            for _ in 0..2 * POOL_BYTES_MAX / POOL_BUF_MAX {
                recycle_buf(Vec::with_capacity(POOL_BUF_MAX));
            }
            POOL.with(|p| {
                let p = p.borrow();
                assert!(p.1 <= POOL_BYTES_MAX);
                assert_eq!(p.1, p.0.iter().map(Vec::capacity).sum::<usize>());
            });
        })
        .join()
        .unwrap();
    }
}
