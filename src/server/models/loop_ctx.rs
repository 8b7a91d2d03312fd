//! What the models that drive connections on a worker's own thread
//! share: how many reads a turn, the shared read buffer's size, the inbox
//! that finished blocking tasks come back through, the context a
//! connection's drive borrows, and a request served in the worker's lent
//! buffers.

use std::cell::Cell;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;

use crate::http::Warm;
use crate::server::offload::Offload;
use crate::server::session::Session;
use crate::server::task::TaskDone;
use crate::server::ServerConfig;

/// Reads served for one connection per wake-up before others get a turn
/// (event loop and async); a connection cut short is revisited on the
/// next round.
pub const READS_PER_TURN: usize = 16;
/// A worker's shared read buffer for connections between requests.
pub const SCRATCH: usize = 64 * 1024;

/// A finished task on its way back to its worker: the connection's token,
/// its generation (which tells it from a later connection that reuses the
/// token after it closed), and the result.
pub type Done = (usize, u64, TaskDone);

/// How a worker is told that its inbox holds a result: the event loop's
/// is a mio waker, io-uring's an eventfd its ring keeps a read on.
pub trait Wake: Send + Sync + 'static {
    fn wake(&self);
}

/// How finished tasks reach a worker. A channel, not a mutex: the offload
/// threads run at a lower priority, and one preempted while holding a lock
/// the loop needs would stall the loop until it got the CPU back.
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

/// What a worker lends the connections it drives, apart from the
/// connections themselves, so that a `Ctx` can be made while one of them
/// is borrowed.
pub struct Env<'a, W> {
    pub cfg: &'a ServerConfig,
    pub offload: &'a Offload,
    pub inbox: Arc<Inbox<W>>,
    /// Lent to the connection being served (see `Warm`); in a `Cell` as
    /// connections get `Ctx` shared.
    warm: Cell<Warm>,
}

impl<'a, W: Wake> Env<'a, W> {
    pub fn new(cfg: &'a ServerConfig, offload: &'a Offload, tx: Sender<Done>, waker: W) -> Self {
        Env {
            cfg,
            offload,
            inbox: Arc::new(Inbox { tx, waker }),
            warm: Cell::default(),
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
    /// The round's clock, read once a round (nginx's cached time) rather
    /// than at every read and write. It runs late by at most the round's
    /// length, which each model bounds; the deadlines it feeds are seconds
    /// long.
    pub now: Instant,
}

impl<W: Wake> Ctx<'_, W> {
    /// Decodes and answers what `session` holds; blocking work the handlers
    /// left goes to the offload pool, its result to the worker's inbox
    /// addressed to (`token`, `gen`).
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

    /// Serves `bytes`, just read for a connection between requests, in the
    /// worker's warm buffers, lent for this request only: an idle
    /// connection then holds only what its request left (see `Warm`).
    pub fn serve_lent(&self, session: &mut Session, bytes: &[u8], token: usize, gen: u64) {
        let mut warm = self.env.warm.take();
        session.conn.swap_warm(&mut warm);
        session.conn.feed(bytes);
        session.on_read(self.now, bytes.len());
        self.process(session, token, gen);
        session.conn.swap_warm(&mut warm);
        self.env.warm.set(warm);
    }
}
