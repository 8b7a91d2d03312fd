//! The `async` model (a tokio work-stealing runtime, a task per connection,
//! file work on the offload pool) and `async-local` (a single-threaded
//! runtime per worker, each with its own SO_REUSEPORT listener).

use std::cell::RefCell;
use std::future::{pending, poll_fn, Future};
use std::io::{self, Read, Write};
use std::net::TcpListener as StdListener;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use socket2::SockRef;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::{Builder, Runtime};

use crate::http::Limits;
use crate::server::accept::{self, ConnLimit, ConnSlot};
use crate::server::driver::{self, Lent, Pause, Socket};
use crate::server::handlers::{App, Response};
use crate::server::linger::{drop_input, Linger};
use crate::server::offload::Offload;
use crate::server::outq::{OutQueue, Wrote, WRITE_BUDGET};
use crate::server::session::Session;
use crate::server::shutdown::TICK;
use crate::server::task::Task;
use crate::server::workers::per_listener;
use crate::server::{Ready, ServerConfig, Shutdown};

/// How soon the acceptor retries at --max-connections: a close frees its
/// slot silently, as a wake-up per close would tax every connection.
const FULL_RETRY: Duration = Duration::from_millis(5);
/// How often a draining runtime checks its connection count.
const DRAIN_POLL: Duration = Duration::from_millis(10);

thread_local! {
    /// Each worker's buffers, lent to the connection its drive serves (see
    /// `Lent`). Never held across an await: a drive does not wait.
    static LENT: RefCell<Lent> = RefCell::new(Lent::default());
}

pub fn run(listener: StdListener, cfg: &ServerConfig, shutdown: &Shutdown) -> anyhow::Result<()> {
    let offload = &Offload::for_model("async")?;
    let mut builder = Builder::new_multi_thread();
    let rt = runtime(builder.worker_threads(cfg.workers.max(1)), "async")
        .map_err(|e| anyhow::anyhow!("async: cannot start the runtime: {e}"))?;
    serve_on(
        rt,
        listener,
        cfg,
        cfg.max_connections,
        shutdown,
        offload,
        "async",
    )
}

/// The `async-local` model: a single-threaded runtime per worker, each with
/// its own SO_REUSEPORT listener, so tasks never move between threads.
pub fn run_local(
    listener: StdListener,
    cfg: &ServerConfig,
    shutdown: &Shutdown,
    ready: Ready<'_>,
) -> anyhow::Result<()> {
    // One pool for all: file work is bounded by the disk, not the runtimes.
    let offload = &Offload::for_model("async-local")?;
    let names = ("async-local", "runtime");
    per_listener(listener, cfg, names, shutdown, ready, |l, share, set_up| {
        let rt = match runtime(&mut Builder::new_current_thread(), "async-local") {
            Ok(rt) => rt,
            Err(e) => {
                let why = format!("cannot start a runtime: {e}");
                set_up.failed(why.clone());
                anyhow::bail!("async-local: {why}");
            }
        };
        set_up.done(String::new());
        drop(set_up);
        serve_on(rt, l, cfg, share, shutdown, offload, "async-local")
    })
}

fn runtime(builder: &mut Builder, name: &str) -> io::Result<Runtime> {
    builder.thread_name(name).enable_all().build()
}

/// Serves `listener` on `rt` until shutdown, then lets its connections
/// drain within the grace period while the runtime still runs them.
fn serve_on(
    rt: Runtime,
    listener: StdListener,
    cfg: &ServerConfig,
    max_conns: usize,
    shutdown: &Shutdown,
    offload: &Offload,
    model: &str,
) -> anyhow::Result<()> {
    listener.set_nonblocking(true)?;
    let limit = ConnLimit::new(max_conns);
    let served = rt.block_on(async {
        let listener = TcpListener::from_std(listener)?;
        // A task, so on a multi-thread runtime it accepts on a worker: tokio
        // runs a task a worker spawns next on that same worker.
        let shared = Shared::new(cfg, shutdown, offload);
        let accepted = tokio::spawn(accept_loop(listener, shared, limit.clone())).await;
        // The listener is closed, so new clients are refused while these
        // drain: awaited, not `wait_drained`, as a current-thread runtime
        // runs its tasks only while it is blocked on.
        let until = Instant::now() + cfg.shutdown_grace;
        while limit.active() > 0 && Instant::now() < until {
            tokio::time::sleep(DRAIN_POLL).await;
        }
        accepted.map_err(|e| anyhow::anyhow!("{model}: the acceptor failed: {e}"))
    });
    // Waits for no task or blocking work: the grace period bounds the exit.
    rt.shutdown_background();
    served
}

/// What every connection's task shares.
struct Shared {
    app: Arc<App>,
    limits: Arc<Limits>,
    stop: Stop,
    offload: Offload,
}

/// Shutdown, awaitable via its wake-up descriptor. Never read back, so once
/// readable it wakes every task that waits on it, now or later.
struct Stop {
    shutdown: Shutdown,
    wake: Option<AsyncFd<OwnedFd>>,
}

impl Shared {
    /// Needs the runtime's context (to register the shutdown descriptor).
    fn new(cfg: &ServerConfig, shutdown: &Shutdown, offload: &Offload) -> Arc<Shared> {
        Arc::new(Shared {
            app: Arc::clone(&cfg.app),
            limits: cfg.limits.clone(),
            stop: Stop::new(shutdown),
            offload: offload.clone(),
        })
    }
}

impl Stop {
    fn new(shutdown: &Shutdown) -> Stop {
        let wake = shutdown
            .wake_fd()
            .and_then(|fd| fd.try_clone_to_owned().ok())
            .and_then(|fd| {
                // SAFETY: `fd` is an OwnedFd the AsyncFd owns from here on:
                // it stays open, and is the same descriptor, until the
                // AsyncFd is dropped.
                unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.ok()
            });
        Stop {
            shutdown: shutdown.clone(),
            wake,
        }
    }

    fn is_set(&self) -> bool {
        self.shutdown.is_set()
    }

    /// Returns once shutdown has begun.
    async fn wait(&self) {
        if let Some(fd) = &self.wake {
            // The guard is dropped without clearing the readiness.
            if fd.readable().await.is_ok() {
                return;
            }
        }
        // No descriptor to wait on: look every TICK, as blocking models do.
        while !self.is_set() {
            tokio::time::sleep(TICK).await;
        }
    }
}

enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Whichever of two futures finishes first (`a` when both are ready); the
/// other is dropped.
async fn race<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let (mut a, mut b) = (pin!(a), pin!(b));
    poll_fn(|cx| {
        if let Poll::Ready(x) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(x));
        }
        b.as_mut().poll(cx).map(Either::Right)
    })
    .await
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, limit: ConnLimit) {
    loop {
        if shared.stop.is_set() {
            return;
        }
        let pause = if limit.is_full() {
            Some(FULL_RETRY)
        } else {
            match race(shared.stop.wait(), listener.accept()).await {
                Either::Left(()) => return,
                Either::Right(Ok((stream, _))) => {
                    tokio::spawn(serve(stream, Arc::clone(&shared), limit.take()));
                    None
                }
                Either::Right(Err(e)) => accept::after_error(&e),
            }
        };
        if let Some(pause) = pause {
            if let Either::Left(()) = race(shared.stop.wait(), tokio::time::sleep(pause)).await {
                return;
            }
        }
    }
}

/// One connection's task: serves it until it ends, then closes it.
async fn serve(stream: TcpStream, shared: Arc<Shared>, _slot: ConnSlot) {
    let mut c = Conn {
        session: Session::new(shared.limits.clone()),
        stream,
        stop_seen: None,
    };
    c.serve(&shared).await;
    c.close().await;
}

/// What ended a wait.
enum Woke {
    /// The socket is ready (or has an error, which the next call returns).
    Ready,
    Stop,
    Timer,
}

struct Conn {
    stream: TcpStream,
    session: Session,
    /// When this connection first saw shutdown.
    stop_seen: Option<Instant>,
}

impl Conn {
    /// Reads, decodes, answers and writes until the connection is to be
    /// closed: done, failed, timed out, or idle once shutdown began.
    async fn serve(&mut self, shared: &Shared) {
        loop {
            self.settle(shared).await;
            if self.stop_seen.is_none() && shared.stop.is_set() {
                self.stop_seen = Some(Instant::now());
            }
            let Conn {
                stream, session, ..
            } = self;
            let (now, stopping) = (Instant::now(), self.stop_seen.is_some());
            let process = &mut |s: &mut Session| s.process(&shared.app);
            let pause = LENT.with_borrow_mut(|lent| {
                driver::drive(session, &mut Tokio(stream), lent, now, stopping, process)
            });
            let interest = match pause {
                Pause::Task => continue,
                // Yield: a busy client must not keep its worker from others.
                Pause::Turn => {
                    tokio::task::yield_now().await;
                    continue;
                }
                Pause::Close => return,
                Pause::Readable => Some(Interest::READABLE),
                Pause::Writable => Some(Interest::WRITABLE),
                // Nothing to do until a deadline or shutdown (the socket
                // may be readable, so waiting on it would spin).
                Pause::Wait => None,
            };
            // A wait that finds the deadline passed ends at once: a trickle
            // that never lets a wait time out still meets its deadline.
            if !self.wait(shared, interest).await {
                return;
            }
        }
    }

    /// Runs the task the handlers left, if any, on the offload pool while
    /// this task waits for it, and goes on decoding after it.
    async fn settle(&mut self, shared: &Shared) {
        while let Some(task) = self.session.take_task() {
            let kind = task.kind();
            let (tx, rx) = tokio::sync::oneshot::channel();
            shared.offload.submit(task, Box::new(|d| drop(tx.send(d))));
            // The pool answers a panic itself; a lost result is one too.
            let done = rx.await;
            let done = done.unwrap_or_else(|_| Task::failed(kind, Response::error(500)));
            self.session.complete(done);
            self.session.process(&shared.app);
        }
    }

    /// Waits for the socket (`interest`; None: for no socket event), for the
    /// connection's deadline, or for shutdown. False: close the connection.
    async fn wait(&mut self, shared: &Shared, interest: Option<Interest>) -> bool {
        let now = Instant::now();
        let deadline = self.session.deadline(now);
        // Once stopping, an idle connection gets one TICK for a request sent
        // just before (answered, not reset unread), then is closed.
        let idle_until = self
            .stop_seen
            .filter(|_| self.session.is_idle())
            .map(|t| t + TICK);
        let until = deadline.into_iter().chain(idle_until).min();
        let stop = (self.stop_seen.is_none()).then_some(&shared.stop);
        let woke = if until.is_some_and(|u| now >= u) {
            Woke::Timer
        } else {
            let ready = async {
                match interest {
                    Some(i) => drop(self.stream.ready(i).await),
                    None => pending().await,
                }
            };
            let stop = async {
                match stop {
                    Some(s) => s.wait().await,
                    None => pending().await,
                }
            };
            let timer = async {
                match until {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => pending().await,
                }
            };
            match race(ready, race(stop, timer)).await {
                Either::Left(()) => Woke::Ready,
                Either::Right(Either::Left(())) => Woke::Stop,
                Either::Right(Either::Right(())) => Woke::Timer,
            }
        };
        match woke {
            Woke::Ready => true,
            Woke::Stop => {
                self.stop_seen = Some(Instant::now());
                true
            }
            Woke::Timer => {
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) {
                    self.timed_out();
                    return false;
                }
                !(idle_until.is_some_and(|t| now >= t) && self.session.is_idle())
            }
        }
    }

    /// The deadline passed: a 408 if a request was partly received, written
    /// if the socket takes it now; the connection then closes.
    fn timed_out(&mut self) {
        self.session.on_timeout();
        let _ = Tokio(&self.stream).send(&mut self.session.out, WRITE_BUDGET);
    }

    /// Closes the connection, with the linger every model uses (see
    /// `linger`) when the client may still be sending.
    async fn close(self) {
        if !self.session.conn.should_linger() {
            return;
        }
        let stream = self.stream;
        let _ = SockRef::from(&stream).shutdown(std::net::Shutdown::Write);
        let mut l = Linger::start(Instant::now());
        loop {
            let until = tokio::time::Instant::from_std(l.deadline());
            if !matches!(
                tokio::time::timeout_at(until, stream.readable()).await,
                Ok(Ok(()))
            ) {
                return;
            }
            // A read that finds nothing is said as WouldBlock, so the
            // runtime forgets the readiness and the next wait is for more.
            let r = stream.try_io(Interest::READABLE, || {
                match drop_input(&*SockRef::from(&stream), &mut l) {
                    true => Err(io::ErrorKind::WouldBlock.into()),
                    false => Ok(()),
                }
            });
            if !matches!(&r, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
                return;
            }
        }
    }
}

/// A connection's socket for the drive loop: each call runs in `try_io`,
/// so one that finds it not ready clears readiness for a fresh edge.
struct Tokio<'a>(&'a TcpStream);

impl Socket for Tokio<'_> {
    fn send(&mut self, out: &mut OutQueue, budget: u64) -> io::Result<Wrote> {
        let r = self.0.try_io(Interest::WRITABLE, || {
            match out.write_to(&mut Raw(self.0), budget) {
                Ok(Wrote::Blocked) => Err(io::ErrorKind::WouldBlock.into()),
                r => r,
            }
        });
        match r {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Wrote::Blocked),
            r => r,
        }
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0
            .try_io(Interest::READABLE, || (&*SockRef::from(self.0)).read(buf))
    }
}

/// The socket as `OutQueue` writes to it: plain sends (MSG_NOSIGNAL), and
/// the descriptor for sendfile and corking.
struct Raw<'a>(&'a TcpStream);

impl Write for Raw<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*SockRef::from(self.0)).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsFd for Raw<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}
