//! The close-with-linger rule of every model: shut down writing and drop
//! late input, as closing with input unread sends an RST that can destroy
//! the response. Models do the reads; this decides when to stop.

use std::io::{self, Read};
use std::time::{Duration, Instant};

use super::shutdown::TICK;

/// The longest a close lingers, however the peer keeps sending: a blocking
/// worker is held for it, so it is bounded like a request's time is.
pub const LINGER: Duration = Duration::from_secs(1);
/// A linger ends after this long with nothing received (a client done
/// reading stops within a round trip); one TICK, so a once-a-tick sweep
/// can enforce it.
pub const LINGER_QUIET: Duration = TICK;

/// A close in progress: when it must end, and when it ends unless more
/// arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Linger {
    until: Instant,
    quiet_until: Instant,
}

impl Linger {
    /// A linger that began at `now` (writing was just shut down).
    pub fn start(now: Instant) -> Linger {
        Linger {
            until: now + LINGER,
            quiet_until: now + LINGER_QUIET,
        }
    }

    /// `n` bytes arrived at `now` and were dropped; 0 is the peer's EOF.
    /// False: the linger is over, close now.
    pub fn received(&mut self, n: usize, now: Instant) -> bool {
        if n == 0 {
            return false;
        }
        self.quiet_until = (now + LINGER_QUIET).min(self.until);
        now < self.until
    }

    /// When the linger ends unless more arrives first.
    pub fn deadline(&self) -> Instant {
        self.quiet_until.min(self.until)
    }

    /// Whether the linger is over at `now` (its time is up, or it was
    /// quiet too long).
    pub fn is_over(&self, now: Instant) -> bool {
        now >= self.deadline()
    }
}

/// Reads and drops what `sock` holds now. True: it would block, and the
/// linger goes on (wait for more, or for `deadline`); false: it is over
/// (the peer's EOF, an error, or its time is up).
pub fn drop_input(mut sock: impl Read, l: &mut Linger) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match sock.read(&mut buf) {
            Ok(n) if l.received(n, Instant::now()) => {}
            Ok(_) => return false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_would_block(&e) => return !l.is_over(Instant::now()),
            Err(_) => return false,
        }
    }
}

/// A read found nothing (a non-blocking socket), or waited its whole
/// timeout (a blocking one).
fn is_would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eof_ends_it_at_once() {
        let now = Instant::now();
        assert!(!Linger::start(now).received(0, now));
    }

    #[test]
    fn quiet_ends_it_and_data_extends_it_up_to_the_bound() {
        let t0 = Instant::now();
        let mut l = Linger::start(t0);
        assert!(!l.is_over(t0));
        assert!(l.is_over(t0 + LINGER_QUIET));
        // Data keeps it open a quiet gap past the last bytes...
        let t1 = t0 + LINGER_QUIET / 2;
        assert!(l.received(100, t1));
        assert!(!l.is_over(t0 + LINGER_QUIET));
        assert!(l.is_over(t1 + LINGER_QUIET));
        // ...but never past LINGER, however steady the peer.
        let mut t = t0;
        while l.received(1, t) {
            t += LINGER_QUIET / 2;
        }
        assert!(t >= t0 + LINGER);
        assert_eq!(l.deadline(), t0 + LINGER);
    }
}
