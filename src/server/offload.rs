//! Threads that run sessions' blocking work (`Task`s) so event loops never
//! wait on the disk; results go back through a callback, so the pool knows
//! nothing of any model's IO.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use super::handlers::Response;
use super::task::{Task, TaskDone};

/// Threads running tasks; tasks mostly wait on the disk (fsync), so this
/// may exceed the cores.
pub const OFFLOAD_THREADS: usize = 4;
/// Most tasks waiting for a thread (a connection has one at most); past it
/// a task gets 503 with `Retry-After` rather than queueing without end.
pub const OFFLOAD_QUEUE: usize = 1024;
/// Nice value of the pool's threads, so a long hash yields the CPU to the
/// event loops, whose work is short.
pub const OFFLOAD_NICE: i32 = 10;

/// Receives a task's result, on a pool thread (the caller's if refused).
pub type Done = Box<dyn FnOnce(TaskDone) + Send>;

struct Queued {
    task: Task,
    done: Done,
}

/// A fixed pool of threads with a bounded queue; clones share it. Dropping
/// the last lets queued tasks finish; threads are not joined, so a long task cannot hold up
/// exit past the shutdown grace.
#[derive(Clone)]
pub struct Offload {
    tx: SyncSender<Queued>,
}

impl Offload {
    /// `start`, with errors naming `model`.
    pub fn for_model(model: &str) -> anyhow::Result<Offload> {
        Offload::start()
            .map_err(|e| anyhow::anyhow!("{model}: cannot start the offload threads: {e}"))
    }

    /// Starts the pool; fails only if not even one thread can be started.
    pub fn start() -> std::io::Result<Offload> {
        let (tx, rx) = sync_channel::<Queued>(OFFLOAD_QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        let mut started = 0;
        let mut last_err = None;
        for i in 0..OFFLOAD_THREADS {
            let rx = Arc::clone(&rx);
            match std::thread::Builder::new()
                .name(format!("offload-{i}"))
                .spawn(move || work(&rx))
            {
                Ok(_) => started += 1,
                Err(e) => last_err = Some(e),
            }
        }
        match (started, last_err) {
            (0, Some(e)) => Err(e),
            _ => Ok(Offload { tx }),
        }
    }

    /// Queues `task` for `done`; with the queue full, `done` gets 503 at
    /// once and the task is dropped unrun (an upload's temp file with it).
    pub fn submit(&self, task: Task, done: Done) {
        match self.tx.try_send(Queued { task, done }) {
            Ok(()) => {}
            Err(TrySendError::Full(q)) | Err(TrySendError::Disconnected(q)) => {
                let kind = q.task.kind();
                drop(q.task);
                (q.done)(Task::failed(kind, busy()));
            }
        }
    }
}

/// The answer to work the pool cannot take now.
fn busy() -> Response {
    Response::error(503).header("Retry-After", "1")
}

fn work(rx: &Mutex<Receiver<Queued>>) {
    lower_priority();
    loop {
        // Hold the lock only while waiting, never while a task runs.
        let task = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(Queued { task, done }) = task else {
            return; // the pool was dropped and the queue is empty
        };
        // A panic answers 500 rather than strand the connection and lose
        // a thread.
        let kind = task.kind();
        let result = catch_unwind(AssertUnwindSafe(|| task.run()))
            .unwrap_or_else(|_| Task::failed(kind, Response::error(500)));
        done(result);
    }
}

/// Gives this thread OFFLOAD_NICE; best effort, as normal priority is
/// still correct.
fn lower_priority() {
    let tid = nix::unistd::gettid().as_raw() as libc::id_t;
    // SAFETY: setpriority only reads its integer arguments; on Linux the
    // nice value is per thread, and `tid` is this thread's id.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, tid, OFFLOAD_NICE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::handlers::Job;
    use std::sync::mpsc::{channel, Sender};
    use std::time::Duration;

    /// Submits an answering job whose status goes to `tx`.
    fn submit(pool: &Offload, job: Job, tx: &Sender<u16>) {
        let tx = tx.clone();
        pool.submit(
            Task::Answer(job),
            Box::new(move |d| {
                if let TaskDone::Answer(r) = d {
                    let _ = tx.send(r.status);
                }
            }),
        );
    }

    fn collect(rx: &std::sync::mpsc::Receiver<u16>, n: usize) -> Vec<u16> {
        let mut got: Vec<u16> = (0..n)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        got.sort();
        got
    }

    #[test]
    fn tasks_run_off_the_caller_and_answer_through_done() {
        let pool = Offload::start().unwrap();
        let (tx, rx) = channel();
        let caller = std::thread::current().id();
        for status in [200u16, 201, 204] {
            let job: Job = Box::new(move || {
                assert_ne!(std::thread::current().id(), caller);
                Response::new(status)
            });
            submit(&pool, job, &tx);
        }
        assert_eq!(collect(&rx, 3), [200, 201, 204]);
        // A step's result comes back as a step.
        let (stx, srx) = channel();
        pool.submit(
            Task::Step(Box::new(|| Err(Response::error(507)))),
            Box::new(move |d| {
                if let TaskDone::Step(r) = d {
                    stx.send(r.map_err(|e| e.status)).unwrap();
                }
            }),
        );
        assert_eq!(srx.recv_timeout(Duration::from_secs(10)).unwrap(), Err(507));
    }

    #[test]
    fn a_panicking_task_answers_500_and_the_pool_goes_on() {
        let pool = Offload::start().unwrap();
        let (tx, rx) = channel();
        for i in 0..OFFLOAD_THREADS + 1 {
            let job: Job = Box::new(move || {
                if i < OFFLOAD_THREADS {
                    panic!("job {i} fails");
                }
                Response::new(200)
            });
            submit(&pool, job, &tx);
        }
        let mut want = vec![200];
        want.extend(std::iter::repeat(500).take(OFFLOAD_THREADS));
        assert_eq!(collect(&rx, OFFLOAD_THREADS + 1), want);
    }

    #[test]
    fn a_full_queue_is_503_at_once() {
        let pool = Offload::start().unwrap();
        let (release_tx, release_rx) = channel::<()>();
        let release_rx = Arc::new(Mutex::new(release_rx));
        let (started_tx, started_rx) = channel();
        let (tx, rx) = channel();
        let held = |started: bool| -> Job {
            let (started_tx, release_rx) = (started_tx.clone(), Arc::clone(&release_rx));
            Box::new(move || {
                if started {
                    started_tx.send(()).unwrap();
                }
                // Returns once release_tx is dropped.
                let _ = release_rx.lock().unwrap().recv();
                Response::new(200)
            })
        };
        // Every thread busy, then the queue filled.
        for _ in 0..OFFLOAD_THREADS {
            submit(&pool, held(true), &tx);
        }
        for _ in 0..OFFLOAD_THREADS {
            started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        }
        for _ in 0..OFFLOAD_QUEUE {
            submit(&pool, held(false), &tx);
        }
        let (over_tx, over_rx) = channel();
        submit(&pool, Box::new(|| Response::new(200)), &over_tx);
        assert_eq!(over_rx.try_recv(), Ok(503), "answered at once");
        drop(release_tx);
        let answered = (0..OFFLOAD_THREADS + OFFLOAD_QUEUE)
            .filter(|_| rx.recv_timeout(Duration::from_secs(10)) == Ok(200))
            .count();
        assert_eq!(answered, OFFLOAD_THREADS + OFFLOAD_QUEUE);
    }
}
