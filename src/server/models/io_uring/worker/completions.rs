//! What each completion means to a worker: a new connection, input, an
//! output operation done, the tick, or finished tasks from the offload pool.

use std::io;
use std::net::TcpStream;
use std::os::fd::FromRawFd;
use std::sync::Arc;
use std::time::Instant;

use io_uring::cqueue;

use super::super::conn::Conn;
use super::super::{decode, Op, GEN_BITS};
use super::{Accepting, Worker};
use crate::server::accept;
use crate::server::session::Session;

impl Worker<'_> {
    /// Takes this round's completions and hands each to its owner.
    pub(super) fn reap(&mut self, now: Instant, stopping: bool) {
        self.cqes.extend(
            self.ring
                .completion()
                .map(|c| (c.user_data(), c.result(), c.flags())),
        );
        let mut cqes = std::mem::take(&mut self.cqes);
        for &(ud, res, flags) in &cqes {
            let Some((op, token, gen)) = decode(ud) else {
                continue;
            };
            match op {
                Op::Accept => self.on_accept(res, flags, now),
                Op::Recv => self.on_recv(token, gen, res, flags, now, stopping),
                Op::Send | Op::SendQuiet | Op::SpliceIn | Op::SpliceOut | Op::Writable => {
                    if let Some(c) = self.conn(token, gen) {
                        if c.on_sent(op, res, now) {
                            self.drive_one(token, now, stopping, false);
                        } else {
                            self.close(token, now);
                            self.touch(token);
                        }
                    }
                }
                Op::Tick => self.on_tick(res, flags, now),
                Op::Wake => {
                    self.woken = true;
                    self.wake_armed = false;
                    if res != -libc::ECANCELED && !self.clock.is_stopping() {
                        self.arm_wake();
                    }
                }
                Op::Stop | Op::Cancel => {}
            }
        }
        self.bufs.publish();
        cqes.clear();
        self.cqes = cqes;
    }

    /// The TICK timeout fired. A multishot tick re-arms before the round's
    /// clock is read, so its next fire would fall just short of the sweep:
    /// each fire makes the sweep due instead. A tick ending in an error (no
    /// multishot timeouts) turns quiet sends off, so the next is one-shot.
    fn on_tick(&mut self, res: i32, flags: u32, now: Instant) {
        self.tick_armed = cqueue::more(flags);
        self.clock.sweep_now(now);
        if !self.tick_armed && res != -libc::ETIME && self.features.quiet_sends {
            eprintln!("loadlab: io-uring: the ring's tick ended ({res}); quiet sends off");
            self.features.quiet_sends = false;
        }
    }

    fn on_accept(&mut self, res: i32, flags: u32, now: Instant) {
        if !cqueue::more(flags) {
            self.accepting = Accepting::Off;
        }
        if res >= 0 {
            // SAFETY: a successful accept's result is a new descriptor
            // that nothing else owns.
            let sock = unsafe { TcpStream::from_raw_fd(res) };
            let gen = self.next_gen;
            self.next_gen = (self.next_gen + 1) & ((1 << GEN_BITS) - 1);
            let session = Session::accepted_at(Arc::clone(&self.env.cfg.limits), now);
            let token = self.conns.insert(Conn::new(sock, session, gen));
            self.touch(token);
            return;
        }
        let e = io::Error::from_raw_os_error(-res);
        if res == -libc::ECANCELED {
            return;
        }
        let pause = accept::after_error(&e);
        if let Some(pause) = pause.filter(|_| !cqueue::more(flags)) {
            self.accept_paused_until = Some(now + pause);
        }
    }

    fn on_recv(
        &mut self,
        token: usize,
        gen: u32,
        res: i32,
        flags: u32,
        now: Instant,
        stopping: bool,
    ) {
        let bid = cqueue::buffer_select(flags);
        let ctx = self.env.ctx(now, stopping);
        let more = cqueue::more(flags);
        let mut live = false;
        if let Some(c) = self.conns.get_mut(token).filter(|c| c.gen == gen) {
            let data = match bid {
                Some(bid) if res > 0 => Some(self.bufs.get(bid, res as usize)),
                _ => None,
            };
            c.on_recv(data, res, more, &ctx, token);
            live = true;
        }
        if let Some(bid) = bid {
            self.bufs.give(bid);
        }
        if live {
            self.drive_one(token, now, stopping, false);
        }
    }

    /// Hands finished tasks' results to their connections. A result whose
    /// connection has closed (its token free or reused) is dropped.
    pub(super) fn take_done(&mut self) {
        while let Ok((token, gen, result)) = self.done.try_recv() {
            // Generations are GEN_BITS wide here: any other is no
            // connection's.
            let Ok(gen) = u32::try_from(gen) else {
                continue;
            };
            if let Some(c) = self.conn(token, gen).filter(|c| !c.closing) {
                c.on_done(result);
                self.touch(token);
            }
        }
    }
}
