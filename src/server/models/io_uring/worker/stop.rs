//! A worker's shutdown: it stops accepting, lets connections between
//! requests learn of it, and once they are gone (or the grace is over)
//! ends every connection and waits, boundedly, for the kernel to finish
//! with their buffers before freeing them.

use std::time::Instant;

use super::{cancel, user_data, Op, Worker, DRAIN_OPS};

impl Worker<'_> {
    /// Shutdown: stops accepting the first time, then says whether the
    /// worker is done (no connections left, or the grace period is over).
    pub(super) fn stopped(&mut self, now: Instant) -> bool {
        if self.stop_started.is_none() {
            self.stop_started = Some(now);
            self.listener = None;
            self.arm_accept(now);
            // Connections between requests learn of it now, not at their
            // next request: their next response closes.
            let tokens: Vec<usize> = self.conns.iter().map(|(t, _)| t).collect();
            for t in tokens {
                self.touch(t);
            }
        }
        let deadline = self.stop_started.map(|t| t + self.env.cfg.shutdown_grace);
        self.conns.is_empty() || deadline.is_some_and(|d| now >= d)
    }

    /// Ends every connection and waits (boundedly) for the kernel to finish
    /// with their buffers before they are freed.
    pub(super) fn finish(&mut self) -> anyhow::Result<()> {
        for (_, c) in self.conns.iter_mut() {
            c.linger = None;
            c.start_close(false);
        }
        if self.wake_armed {
            self.sqes.push(cancel(user_data(Op::Wake, 0, 0)));
        }
        let until = Instant::now() + DRAIN_OPS;
        loop {
            self.conns.retain(|_, c| c.in_flight());
            if self.conns.is_empty() && !self.wake_armed {
                return Ok(());
            }
            if Instant::now() >= until {
                // The kernel may still own buffers of operations that did
                // not end: leaked, they cannot be written after being freed.
                std::mem::forget(std::mem::take(&mut self.conns));
                std::mem::forget(std::mem::replace(&mut self.wake_buf, Box::new(0)));
                self.bufs.leak();
                return Ok(());
            }
            self.wait()?;
            self.reap(Instant::now(), true);
            self.touched.clear();
        }
    }
}
