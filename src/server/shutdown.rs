//! Graceful-shutdown signal shared by every model, and the wake-up that
//! lets every waiting thread see it at once.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

/// How often loops wake to check shutdown and deadlines: a signal wakes
/// only one thread, and not every loop can wait on the wake-up descriptor.
pub const TICK: Duration = Duration::from_millis(100);

/// A due sweep of an event-driven model's connections; see `Clock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    /// Close idle connections: shutdown is a tick old, so requests sent
    /// just before it were answered rather than reset unread.
    pub close_idle: bool,
}

/// A worker's clock for what is not any one connection's: when its
/// once-a-TICK sweep of deadlines is due, and when it first saw shutdown,
/// from which its connections have the grace period.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    next_sweep: Instant,
    stop_started: Option<Instant>,
    grace: Duration,
}

impl Clock {
    pub fn new(grace: Duration) -> Clock {
        Clock {
            next_sweep: Instant::now() + TICK,
            stop_started: None,
            grace,
        }
    }

    /// Notes that shutdown is set at `now`; true the first time.
    pub fn stop(&mut self, now: Instant) -> bool {
        let first = self.stop_started.is_none();
        self.stop_started.get_or_insert(now);
        first
    }

    pub fn is_stopping(&self) -> bool {
        self.stop_started.is_some()
    }

    /// Shutdown began a grace period ago: what is still open is dropped.
    pub fn grace_over(&self, now: Instant) -> bool {
        self.stop_started
            .is_some_and(|t| now.saturating_duration_since(t) >= self.grace)
    }

    /// Whether the sweep is due at `now` (then the next is a TICK on). It
    /// is asked every round, so it only compares instants.
    pub fn sweep_due(&mut self, now: Instant) -> Option<Sweep> {
        if now < self.next_sweep {
            return None;
        }
        self.next_sweep = now + TICK;
        Some(Sweep {
            close_idle: self
                .stop_started
                .is_some_and(|t| now.saturating_duration_since(t) >= TICK),
        })
    }

    /// Makes the sweep due now (a timer fired).
    pub fn sweep_now(&mut self, now: Instant) {
        self.next_sweep = self.next_sweep.min(now);
    }
}

/// A one-shot timer readable a TICK after arming, for epoll loops: waiting
/// without a timeout and waking on this spares the kernel arming and
/// cancelling a timer at every wait.
pub struct TickTimer(TimerFd);

impl TickTimer {
    /// An armed timer; None when out of descriptors (bound waits by TICK).
    pub fn new() -> Option<Self> {
        let flags = TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC;
        let timer = TickTimer(TimerFd::new(ClockId::CLOCK_MONOTONIC, flags).ok()?);
        timer.arm().then_some(timer)
    }

    /// Fires TICK from now, clearing the last expiry (nothing to read).
    /// Arm after the round's sweep, so the expiry finds the next one due.
    pub fn arm(&self) -> bool {
        let tick = Expiration::OneShot(TimeSpec::from_duration(TICK));
        self.0.set(tick, TimerSetTimeFlags::empty()).is_ok()
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

static SIGNALLED: AtomicBool = AtomicBool::new(false);
/// The eventfd the signal handler writes to (-1: none), waking waiters.
static SIGNAL_WAKE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(_: libc::c_int) {
    // An atomic store and write(2): both async-signal-safe.
    SIGNALLED.store(true, Ordering::SeqCst);
    let fd = SIGNAL_WAKE.load(Ordering::SeqCst);
    if fd >= 0 {
        wake(fd);
    }
}

/// Makes an eventfd readable for good (it is never read back), so every
/// poller sees it, level- or edge-triggered.
fn wake(fd: libc::c_int) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64 to a descriptor this module
    // owns for the life of the process (or of the `Shutdown`); an error
    // (a full counter) still leaves it readable, which is all that counts.
    unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
}

/// A non-blocking eventfd; None when out of descriptors (waiters then
/// poll every TICK).
fn eventfd() -> Option<OwnedFd> {
    // SAFETY: eventfd takes no pointers; a non-negative result is a new
    // descriptor that nothing else owns.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    // SAFETY: see above: the descriptor is ours to own.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Set when the server should stop accepting and finish what is in flight.
#[derive(Clone, Debug, Default)]
pub struct Shutdown {
    flag: Arc<AtomicBool>,
    signals: bool,
    /// Readable once shutdown began; prefork workers inherit it, so the
    /// master's stop wakes them too.
    wake: Option<Arc<OwnedFd>>,
}

impl Shutdown {
    /// A shutdown triggered only by `trigger` (for embedding and tests).
    pub fn new() -> Self {
        Shutdown {
            wake: eventfd().map(Arc::new),
            ..Self::default()
        }
    }

    /// Also triggered by SIGINT and SIGTERM; the handler (inherited by forked
    /// workers) has no SA_RESTART, so blocking calls return EINTR.
    pub fn from_signals() -> anyhow::Result<Self> {
        use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
        let wake = eventfd().map(Arc::new);
        if let Some(fd) = &wake {
            // Lives as long as this Shutdown's clones; the CLI keeps one
            // for the life of the process.
            SIGNAL_WAKE.store(fd.as_raw_fd(), Ordering::SeqCst);
        }
        let act = SigAction::new(
            SigHandler::Handler(on_signal),
            SaFlags::empty(),
            SigSet::empty(),
        );
        for sig in [Signal::SIGINT, Signal::SIGTERM] {
            // SAFETY: the handler only stores to an atomic and writes to
            // an eventfd, both async-signal-safe, and no other handler is
            // being replaced.
            unsafe { sigaction(sig, &act) }?;
        }
        // A client that goes away mid-write must give EPIPE, not kill us.
        // SAFETY: ignoring SIGPIPE installs no code at all.
        unsafe { nix::sys::signal::signal(Signal::SIGPIPE, SigHandler::SigIgn) }?;
        Ok(Shutdown {
            flag: Arc::new(AtomicBool::new(false)),
            signals: true,
            wake,
        })
    }

    pub fn trigger(&self) {
        self.flag.store(true, Ordering::SeqCst);
        if let Some(fd) = &self.wake {
            wake(fd.as_raw_fd());
        }
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || (self.signals && SIGNALLED.load(Ordering::Relaxed))
    }

    /// The descriptor that turns readable when shutdown begins, for a
    /// waiter to poll beside its own (None: poll every TICK instead).
    pub fn wake_fd(&self) -> Option<BorrowedFd<'_>> {
        self.wake.as_deref().map(|fd| fd.as_fd())
    }

    /// Sleeps for `timeout`, or less if shutdown begins meanwhile.
    pub fn sleep(&self, timeout: Duration) {
        match self.wake_fd() {
            Some(fd) if !self.is_set() => {
                let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
                let _ = poll(&mut fds, poll_timeout(timeout));
            }
            Some(_) => {}
            None => std::thread::sleep(timeout),
        }
    }
}

/// A duration as poll's timeout, in whole milliseconds (saturating).
pub fn poll_timeout(d: Duration) -> PollTimeout {
    PollTimeout::try_from(d).unwrap_or(PollTimeout::MAX)
}

/// Waits until `done` says all work finished or the grace period passed.
pub fn wait_drained(grace: Duration, done: impl Fn() -> bool) {
    let until = Instant::now() + grace;
    while !done() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_sweeps_each_tick_and_bounds_a_stop_by_the_grace() {
        let mut c = Clock::new(3 * TICK);
        let t0 = Instant::now();
        assert_eq!(c.sweep_due(t0), None, "the first sweep is a TICK away");
        let due = c.sweep_due(t0 + TICK).unwrap();
        assert!(!due.close_idle);
        assert_eq!(c.sweep_due(t0 + TICK), None);
        c.sweep_now(t0 + TICK);
        assert!(
            c.sweep_due(t0 + TICK).is_some(),
            "a fired timer makes it due"
        );
        assert!(!c.is_stopping() && !c.grace_over(t0 + 100 * TICK));
        assert!(c.stop(t0 + TICK));
        assert!(!c.stop(t0 + 2 * TICK), "only the first stop counts");
        // Idle connections close once shutdown is a TICK old.
        let half = t0 + TICK + TICK / 2;
        c.sweep_now(half);
        assert!(!c.sweep_due(half).unwrap().close_idle);
        assert!(c.sweep_due(half + TICK).unwrap().close_idle);
        assert!(!c.grace_over(t0 + 4 * TICK - Duration::from_millis(1)));
        assert!(c.grace_over(t0 + 4 * TICK));
    }

    #[test]
    fn trigger_wakes_a_sleeper_at_once() {
        let s = Shutdown::new();
        assert!(s.wake_fd().is_some());
        let t = {
            let s = s.clone();
            std::thread::spawn(move || {
                let t0 = Instant::now();
                s.sleep(Duration::from_secs(20));
                t0.elapsed()
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        s.trigger();
        assert!(t.join().unwrap() < Duration::from_secs(10));
        assert!(s.is_set());
        // Stays readable: a later waiter does not wait either.
        let t0 = Instant::now();
        s.sleep(Duration::from_secs(20));
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    /// Whether `fd` turns readable within `within`.
    fn readable(fd: BorrowedFd<'_>, within: Duration) -> bool {
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        poll(&mut fds, poll_timeout(within)).unwrap() == 1
    }

    #[test]
    fn the_tick_timer_fires_once_a_tick_after_each_arming() {
        let t0 = Instant::now();
        let timer = TickTimer::new().expect("a timerfd");
        assert!(readable(timer.fd(), Duration::from_secs(10)));
        assert!(t0.elapsed() >= TICK, "it fired early");
        // It stays fired until armed again; arming clears the expiry.
        assert!(readable(timer.fd(), Duration::ZERO));
        assert!(timer.arm());
        assert!(!readable(timer.fd(), Duration::ZERO));
        assert!(readable(timer.fd(), Duration::from_secs(10)));
    }
}
