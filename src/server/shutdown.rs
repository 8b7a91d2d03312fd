//! Graceful-shutdown signal shared by every model.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often blocked loops wake to look at the shutdown flag and at
/// connection deadlines. A signal reaches only one thread, so every loop
/// polls with this bound instead of relying on EINTR.
pub const TICK: Duration = Duration::from_millis(100);

static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: the one thing that is async-signal-safe here.
    SIGNALLED.store(true, Ordering::SeqCst);
}

/// Set when the server should stop accepting and finish what is in flight.
#[derive(Clone, Debug, Default)]
pub struct Shutdown {
    flag: Arc<AtomicBool>,
    signals: bool,
}

impl Shutdown {
    /// A shutdown triggered only by `trigger` (for embedding and tests).
    pub fn new() -> Self {
        Self::default()
    }

    /// A shutdown also triggered by SIGINT and SIGTERM. The handler is
    /// installed without SA_RESTART so blocking calls return EINTR, and is
    /// inherited by forked workers.
    pub fn from_signals() -> anyhow::Result<Self> {
        use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
        let act = SigAction::new(
            SigHandler::Handler(on_signal),
            SaFlags::empty(),
            SigSet::empty(),
        );
        for sig in [Signal::SIGINT, Signal::SIGTERM] {
            // SAFETY: the handler only stores to an atomic, which is
            // async-signal-safe, and no other handler is being replaced.
            unsafe { sigaction(sig, &act) }?;
        }
        // A client that goes away mid-write must give EPIPE, not kill us.
        // SAFETY: ignoring SIGPIPE installs no code at all.
        unsafe { nix::sys::signal::signal(Signal::SIGPIPE, SigHandler::SigIgn) }?;
        Ok(Shutdown {
            flag: Arc::new(AtomicBool::new(false)),
            signals: true,
        })
    }

    pub fn trigger(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || (self.signals && SIGNALLED.load(Ordering::Relaxed))
    }
}

/// Waits until `done` says all work finished or the grace period passed.
pub fn wait_drained(grace: Duration, done: impl Fn() -> bool) {
    let until = Instant::now() + grace;
    while !done() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}
