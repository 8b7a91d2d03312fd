//! The threads that run handlers' blocking work (`Job`s: hashing a file,
//! an upload's fsync and rename) for models whose threads must not block:
//! an event loop that waited on the disk would hold up every other
//! connection it serves. A job goes in with a callback that receives its
//! response; the callback is the model's way home (a mio `Waker` for the
//! event loops), so the pool knows nothing about any model's IO.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use super::handlers::{Job, Response};

/// Threads running jobs. Jobs mostly wait on the disk (fsync), so more
/// than the cores is fine; four hashes at once already keep two cores
/// busy, and more would only queue behind them there.
pub const OFFLOAD_THREADS: usize = 4;
/// Jobs waiting for a thread at most. Each connection has at most one job
/// out, so this bounds how many connections wait for file work; past it a
/// job is refused with 503 and `Retry-After` rather than queued without end.
pub const OFFLOAD_QUEUE: usize = 1024;
/// Nice value of the job threads: a hash is CPU-bound for as long as the
/// file is large, and on a busy machine an event loop woken by a client
/// should get the CPU first (the loop's own work is short).
pub const OFFLOAD_NICE: i32 = 10;

/// Receives a job's response, on the pool's thread (or the caller's, when
/// the job is refused).
pub type Done = Box<dyn FnOnce(Response) + Send>;

struct Task {
    job: Job,
    done: Done,
}

/// A fixed pool of job threads with a bounded queue. Dropping it lets the
/// threads finish the queued jobs and exit; they are not joined, so a long
/// job cannot hold up the server's exit past its shutdown grace.
pub struct Offload {
    tx: SyncSender<Task>,
}

impl Offload {
    /// Starts the pool; fails only if not even one thread can be started.
    pub fn start() -> std::io::Result<Offload> {
        let (tx, rx) = sync_channel::<Task>(OFFLOAD_QUEUE);
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

    /// Queues `job`; `done` gets its response. With the queue full, `done`
    /// gets 503 at once and the job is dropped unrun (an upload's temporary
    /// file with it).
    pub fn submit(&self, job: Job, done: Done) {
        match self.tx.try_send(Task { job, done }) {
            Ok(()) => {}
            Err(TrySendError::Full(t)) | Err(TrySendError::Disconnected(t)) => {
                drop(t.job);
                (t.done)(busy());
            }
        }
    }
}

/// The answer to a job the pool cannot take now.
fn busy() -> Response {
    Response::error(503).header("Retry-After", "1")
}

fn work(rx: &Mutex<Receiver<Task>>) {
    lower_priority();
    loop {
        // The lock is held only while waiting for the next task, never
        // while one runs.
        let task = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(Task { job, done }) = task else {
            return; // the pool was dropped and the queue is empty
        };
        // A job that panics answers 500 instead of leaving its connection
        // waiting for ever and the pool a thread short.
        let resp = catch_unwind(AssertUnwindSafe(job)).unwrap_or_else(|_| Response::error(500));
        done(resp);
    }
}

/// Gives this thread OFFLOAD_NICE. Best effort: without the permission
/// (or on an unusual kernel) jobs run at normal priority, still correct.
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
    use std::sync::mpsc::channel;
    use std::time::Duration;

    #[test]
    fn jobs_run_off_the_caller_and_answer_through_done() {
        let pool = Offload::start().unwrap();
        let (tx, rx) = channel();
        let caller = std::thread::current().id();
        for status in [200u16, 201, 204] {
            let tx = tx.clone();
            pool.submit(
                Box::new(move || {
                    assert_ne!(std::thread::current().id(), caller);
                    Response::new(status)
                }),
                Box::new(move |r| tx.send(r.status).unwrap()),
            );
        }
        let mut got: Vec<u16> = (0..3)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        got.sort();
        assert_eq!(got, [200, 201, 204]);
    }

    #[test]
    fn a_panicking_job_answers_500_and_the_pool_goes_on() {
        let pool = Offload::start().unwrap();
        let (tx, rx) = channel();
        for i in 0..OFFLOAD_THREADS + 1 {
            let tx = tx.clone();
            pool.submit(
                Box::new(move || {
                    if i < OFFLOAD_THREADS {
                        panic!("job {i} fails");
                    }
                    Response::new(200)
                }),
                Box::new(move |r| tx.send(r.status).unwrap()),
            );
        }
        let mut got: Vec<u16> = (0..OFFLOAD_THREADS + 1)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        got.sort();
        let mut want = vec![200];
        want.extend(std::iter::repeat(500).take(OFFLOAD_THREADS));
        assert_eq!(got, want);
    }

    #[test]
    fn a_full_queue_is_503_at_once() {
        let pool = Offload::start().unwrap();
        let (release_tx, release_rx) = channel::<()>();
        let release_rx = Arc::new(Mutex::new(release_rx));
        let (started_tx, started_rx) = channel();
        let (tx, rx) = channel();
        let held = |started: bool| -> (Job, Done) {
            let (tx, started_tx) = (tx.clone(), started_tx.clone());
            let release_rx = Arc::clone(&release_rx);
            (
                Box::new(move || {
                    if started {
                        started_tx.send(()).unwrap();
                    }
                    // Returns once release_tx is dropped.
                    let _ = release_rx.lock().unwrap().recv();
                    Response::new(200)
                }),
                Box::new(move |r| tx.send(r.status).unwrap()),
            )
        };
        // Every thread busy, then the queue filled.
        for _ in 0..OFFLOAD_THREADS {
            let (job, done) = held(true);
            pool.submit(job, done);
        }
        for _ in 0..OFFLOAD_THREADS {
            started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        }
        for _ in 0..OFFLOAD_QUEUE {
            let (job, done) = held(false);
            pool.submit(job, done);
        }
        let (over_tx, over_rx) = channel();
        pool.submit(
            Box::new(|| Response::new(200)),
            Box::new(move |r| over_tx.send(r.status).unwrap()),
        );
        assert_eq!(over_rx.try_recv(), Ok(503), "answered at once");
        drop(release_tx);
        let answered = (0..OFFLOAD_THREADS + OFFLOAD_QUEUE)
            .filter(|_| rx.recv_timeout(Duration::from_secs(10)) == Ok(200))
            .count();
        assert_eq!(answered, OFFLOAD_THREADS + OFFLOAD_QUEUE);
    }
}
