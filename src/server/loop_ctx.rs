//! What a model that drives many connections on a worker's thread (the
//! event loop, io-uring) gets per worker: the inbox finished offload tasks
//! return through, the worker's lent buffers, and a drive's context.

use std::cell::RefCell;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;

use crate::server::driver::Lent;
use crate::server::offload::Offload;
use crate::server::session::Session;
use crate::server::task::TaskDone;
use crate::server::ServerConfig;

/// A finished task on its way back: the connection's token, its generation
/// (telling it from a later connection reusing the token), and the result.
pub type Done = (usize, u64, TaskDone);

/// How a worker is told that its inbox holds a result: the event loop's
/// is a mio waker, io-uring's an eventfd its ring keeps a read on.
pub trait Wake: Send + Sync + 'static {
    fn wake(&self);
}

/// How finished tasks reach a worker. A channel, not a mutex: a low-priority
/// offload thread preempted holding the lock would stall the loop.
pub struct Inbox<W> {
    pub tx: Sender<Done>,
    pub waker: W,
}

impl<W: Wake> Inbox<W> {
    fn deliver(&self, done: Done) {
        // Best effort: a worker that has gone needs neither.
        let _ = self.tx.send(done);
        self.waker.wake();
    }
}

/// What a worker lends its connections, kept apart from them so a `Ctx`
/// can be made while one of them is borrowed.
pub struct Env<'a, W> {
    pub cfg: &'a ServerConfig,
    pub offload: &'a Offload,
    pub inbox: Arc<Inbox<W>>,
    /// Lent to the connection being served; in a `RefCell` as connections
    /// get `Ctx` shared.
    lent: RefCell<Lent>,
}

impl<'a, W: Wake> Env<'a, W> {
    pub fn new(
        cfg: &'a ServerConfig,
        offload: &'a Offload,
        tx: Sender<Done>,
        waker: W,
        lent: Lent,
    ) -> Self {
        Env {
            cfg,
            offload,
            inbox: Arc::new(Inbox { tx, waker }),
            lent: RefCell::new(lent),
        }
    }

    /// The context of a round that started at `now`.
    pub fn ctx(&self, now: Instant, stopping: bool) -> Ctx<'_, W> {
        Ctx {
            env: self,
            stopping,
            now,
        }
    }
}

/// What driving a connection needs besides the connection itself.
pub struct Ctx<'e, W> {
    env: &'e Env<'e, W>,
    pub stopping: bool,
    /// The round's clock, read once a round: it lags by at most a round,
    /// which each model keeps short next to the deadlines it feeds.
    pub now: Instant,
}

impl<W: Wake> Ctx<'_, W> {
    /// Decodes and answers `session`; blocking work goes to the offload pool,
    /// its result to the worker's inbox addressed to (`token`, `gen`).
    pub fn process(&self, session: &mut Session, token: usize, gen: u64) {
        session.process(&self.env.cfg.app);
        if let Some(task) = session.take_task() {
            let inbox = Arc::clone(&self.env.inbox);
            self.env.offload.submit(
                task,
                Box::new(move |result| inbox.deliver((token, gen, result))),
            );
        }
    }

    /// The worker's lent buffers, for a drive (see `driver::drive`).
    pub fn lent(&self) -> std::cell::RefMut<'_, Lent> {
        self.env.lent.borrow_mut()
    }
}
