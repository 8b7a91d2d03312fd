//! The model registry: one entry per concurrency model with its name, how
//! it handles connections, its worker rules and whether it listens with
//! SO_REUSEPORT. It sits below the jobs so that the CLI, the lab, stress
//! and the report list models from here without importing the server;
//! `server::models` maps each entry to its `run`.
//!
//! Adding a model: a variant of `Model`, its entry in `REGISTRY`, its file
//! in server/models and the match arm there that the compiler asks for.
//! Every list of models (CLI help, `serve --list-models`, the scripts, the
//! tests) is read from here.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Model {
    Iterative,
    ThreadPerConn,
    ThreadPool,
    Prefork,
    EventLoop,
    Reactors,
    Async,
    AsyncLocal,
    IoUring,
}

/// What a model does with `--workers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workers {
    /// Ignored: one thread serves every connection (reported as 1).
    One,
    /// Ignored: every connection gets a thread of its own, so the model has
    /// no fixed number of workers (reported as 0).
    PerConnection,
    /// The model runs `--workers` of `unit`, at least `min`; without the
    /// flag, `per_core` for every core the process may use.
    Counted {
        unit: &'static str,
        min: usize,
        per_core: usize,
    },
}

/// One registry entry: everything about a model except its code.
#[derive(Debug, Clone, Copy)]
pub struct ModelInfo {
    pub model: Model,
    /// The name on the command line, in output files and in reports.
    pub name: &'static str,
    /// How the model accepts and serves connections, in one paragraph for
    /// the report and `serve --list-models` (one line, no tabs).
    pub about: &'static str,
    pub workers: Workers,
    /// The listener must let sibling listeners bind the same address.
    pub reuseport: bool,
}

/// The `go` target's paragraph for reports: not a loadlab model but the
/// reference report's Go server, whose M:N model the `async` model follows.
pub const GO_ABOUT: &str = "Go net/http: the standard library's HTTP server \
    (examples/go/server.go, built once with go build and serving the same docroot), \
    not a loadlab model. Each connection is served on its own goroutine; Go's runtime \
    multiplexes the goroutines over GOMAXPROCS OS threads (workers; default one per \
    core) with a shared netpoller (epoll) and work stealing.";

/// Every model, in the order the CLI, the lab and reports list them. The
/// entry of a model sits at its variant's index (checked at compile time).
pub const REGISTRY: &[ModelInfo] = &[
    ModelInfo {
        model: Model::Iterative,
        name: "iterative",
        about: "One thread serves one connection at a time, to the end, in arrival \
            order; reads and writes block (waking every 100 ms to check deadlines and \
            shutdown), so every other client waits meanwhile in the kernel's listen \
            queue. When the connection being served stalls (a read or write waits \
            100 ms), the thread accepts everything in that queue into one of its own, \
            so the waiting connections' timeouts run from then: slow clients that \
            expired while waiting are shed at once instead of each holding the thread \
            for a whole timeout. A keep-alive connection is given up when another \
            connection is waiting: its next response says Connection: close, and \
            an idle one is closed within 100 ms. --workers is ignored.",
        workers: Workers::One,
        reuseport: false,
    },
    ModelInfo {
        model: Model::ThreadPerConn,
        name: "thread-per-conn",
        about: "The main thread accepts connections and starts a new thread (256 KiB \
            stack) for each; that thread serves its connection with blocking reads \
            and writes until the client closes it or a timeout ends it (an idle \
            keep-alive connection keeps its thread until the idle timeout), then exits. \
            Connections are served concurrently up to --max-connections; more wait \
            in the listen queue, and a connection that cannot get a thread is \
            closed. --workers is ignored.",
        workers: Workers::PerConnection,
        reuseport: false,
    },
    ModelInfo {
        model: Model::ThreadPool,
        name: "thread-pool",
        about: "One thread accepts connections into a queue; a fixed pool of worker \
            threads takes them in order and serves each with blocking reads and \
            writes until it closes, so a connection waits in the queue while every \
            worker is busy. While others are queued, a worker gives up its keep-alive \
            connection: an idle one is closed, a new request on it is answered with \
            Connection: close. With --workers \
            0 the pool starts empty, gains a thread whenever a connection finds no \
            idle one and loses a thread that stays idle for 5 s.",
        workers: Workers::Counted {
            unit: "threads",
            min: 0,
            per_core: 4,
        },
        reuseport: false,
    },
    ModelInfo {
        model: Model::Prefork,
        name: "prefork",
        about: "The parent binds the listener and forks worker processes that share \
            it; each worker serves one connection at a time with blocking reads and \
            writes, as the iterative model does, so as many connections are served \
            at once as there are workers and the rest wait in the listen queue (or, \
            accepted there when its connection stalls, in a worker's own queue, \
            where their timeouts run). \
            Idle workers all wait for the listener to be readable, and the one whose \
            accept succeeds serves the connection. The parent only supervises: it \
            replaces a worker that dies and removes the upload a killed worker left \
            half-written.",
        workers: Workers::Counted {
            unit: "processes",
            min: 1,
            per_core: 1,
        },
        reuseport: false,
    },
    ModelInfo {
        model: Model::EventLoop,
        name: "event-loop",
        about: "One thread runs an edge-triggered epoll loop (mio) over non-blocking \
            sockets: it accepts until the listen queue is empty, serves a new \
            connection's request at once and registers the socket with epoll only \
            if it has to wait, then reads and writes each ready connection until \
            its socket would block (at most 16 reads before the others get a turn). \
            No socket operation blocks, but handler work does run on this thread: \
            opening files, sendfile from the page cache, writing and fsyncing \
            uploads delay every other connection. Idle connections share one 64 KiB \
            read buffer. --workers is ignored.",
        workers: Workers::One,
        reuseport: false,
    },
    ModelInfo {
        model: Model::Reactors,
        name: "reactors",
        about: "Several event-loop threads, each with a listener of its own bound to \
            the same port with SO_REUSEPORT: the kernel assigns each new connection \
            to one listener by a hash of its addresses, so the loops share no queue \
            and no lock, and a connection stays on the loop that accepted it (a \
            busy loop is not relieved by an idle one). Each loop works as the \
            event-loop model does, with an equal share of --max-connections.",
        workers: Workers::Counted {
            unit: "event loops",
            min: 1,
            per_core: 1,
        },
        reuseport: true,
    },
    ModelInfo {
        model: Model::Async,
        name: "async",
        about: "A tokio multi-thread runtime (Go's M:N model): --workers threads share \
            one epoll and one listener, and every accepted connection becomes a \
            task that reads and writes its non-blocking socket until it would block, \
            then waits for the socket, its deadline or shutdown. A task is not tied \
            to a thread: an idle worker steals ready tasks from a busy one's queue. \
            A task yields to the others after 16 reads in a row. Blocking file work \
            (upload writes, fsync, hashing) runs on the 4 offload threads the \
            event loops use while the task waits, so no worker waits on the disk.",
        workers: Workers::Counted {
            unit: "worker threads",
            min: 1,
            per_core: 1,
        },
        reuseport: false,
    },
    ModelInfo {
        model: Model::AsyncLocal,
        name: "async-local",
        about: "The async model's tasks on one single-threaded tokio runtime per \
            --workers thread, each runtime with a listener of its own bound to the \
            same port with SO_REUSEPORT (the reactors' layout): the kernel assigns \
            each connection to a runtime, and its task never leaves that thread, so \
            nothing is stolen and no connection is shared, and a busy runtime is not \
            relieved by an idle one. Each runtime has an equal share of \
            --max-connections; file work runs on 4 offload threads they share.",
        workers: Workers::Counted {
            unit: "runtimes",
            min: 1,
            per_core: 1,
        },
        reuseport: true,
    },
    ModelInfo {
        model: Model::IoUring,
        name: "io-uring",
        about: "Several threads, each with an io_uring of its own and a listener bound \
            to the same port with SO_REUSEPORT, as the reactors have. Nothing waits \
            for readiness: one multishot accept takes every connection, one multishot \
            receive per connection fills buffers from a ring of 256 buffers of 16 KiB \
            shared by the thread's connections, and each round submits every response \
            queued and waits for completions in one system call, woken at least \
            every 100 ms for deadlines. Files go from the page cache to the socket \
            through a pipe with splice, not through user space; file work that \
            blocks runs on 4 offload threads that wake the ring through an eventfd. A \
            connection holds at most 64 KiB of input its session has not taken. \
            Refuses to start where io_uring is unavailable.",
        workers: Workers::Counted {
            unit: "rings",
            min: 1,
            per_core: 1,
        },
        reuseport: true,
    },
];

// The entry of a model is found by its variant's index.
const _: () = {
    let mut i = 0;
    while i < REGISTRY.len() {
        assert!(
            REGISTRY[i].model as usize == i,
            "REGISTRY out of variant order"
        );
        i += 1;
    }
};

/// A `--workers` value below what a model can run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{requested} is too few {unit} for {model} (at least {min})")]
pub struct TooFewWorkers {
    pub model: Model,
    pub min: usize,
    pub unit: &'static str,
    pub requested: usize,
}

impl Model {
    /// Every model, in registry order.
    pub const ALL: [Model; REGISTRY.len()] = {
        let mut all = [Model::Iterative; REGISTRY.len()];
        let mut i = 0;
        while i < all.len() {
            all[i] = REGISTRY[i].model;
            i += 1;
        }
        all
    };

    /// Whether the model serves each connection on a thread of its own
    /// with blocking reads and writes, so a handler may wait on the disk
    /// on that thread (the server's `App::may_block`).
    pub const fn serves_blocking(self) -> bool {
        match self {
            Model::Iterative | Model::ThreadPerConn | Model::ThreadPool | Model::Prefork => true,
            Model::EventLoop
            | Model::Reactors
            | Model::Async
            | Model::AsyncLocal
            | Model::IoUring => false,
        }
    }

    pub const fn info(self) -> &'static ModelInfo {
        &REGISTRY[self as usize]
    }

    pub const fn name(self) -> &'static str {
        self.info().name
    }

    /// Workers when `--workers` is not given: one per core for the pools of
    /// processes and reactors (nginx's `worker_processes auto`), four per
    /// core for a thread pool, whose threads block on IO.
    pub fn default_workers(self) -> usize {
        match self.info().workers {
            Workers::One | Workers::PerConnection => 1,
            Workers::Counted { per_core, .. } => per_core * crate::sys::cores(),
        }
    }

    /// Workers actually used for a `--workers` value. 0 is meaningful for a
    /// thread pool: one that grows on demand.
    pub fn effective_workers(self, requested: usize) -> usize {
        match self.info().workers {
            Workers::One => 1,
            Workers::PerConnection => 0,
            Workers::Counted { min, .. } => requested.max(min),
        }
    }

    /// Workers used for an optional `--workers` value: what the server's
    /// start-up line reports as `workers=`.
    pub fn workers(self, requested: Option<usize>) -> usize {
        self.effective_workers(requested.unwrap_or_else(|| self.default_workers()))
    }

    /// The smallest `--workers` value the model accepts (models that ignore
    /// the flag accept any).
    pub fn min_workers(self) -> usize {
        match self.info().workers {
            Workers::One | Workers::PerConnection => 0,
            Workers::Counted { min, .. } => min,
        }
    }

    /// Refuses a `--workers` value below the model's minimum.
    pub fn check_workers(self, requested: usize) -> Result<(), TooFewWorkers> {
        match self.info().workers {
            Workers::Counted { min, unit, .. } if requested < min => Err(TooFewWorkers {
                model: self,
                min,
                unit,
                requested,
            }),
            _ => Ok(()),
        }
    }

    /// Whether the model's listener must allow SO_REUSEPORT siblings.
    pub fn needs_reuseport(self) -> bool {
        self.info().reuseport
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Model {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        super::parse_named(&Model::ALL, Model::name, "model", s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_parse_back() {
        for m in Model::ALL {
            assert_eq!(m.name().parse::<Model>(), Ok(m));
            assert_eq!(
                Model::ALL.iter().filter(|o| o.name() == m.name()).count(),
                1
            );
        }
    }

    #[test]
    fn descriptions_fit_one_line_of_a_tab_separated_listing() {
        for m in Model::ALL {
            let about = m.info().about;
            assert!(about.len() > 100, "{m}: describe it");
            assert!(!about.contains(['\t', '\n']), "{m}: {about:?}");
            assert!(!about.contains("  "), "{m}: a line break left two spaces");
        }
    }

    #[test]
    fn worker_rules_agree_with_each_other() {
        for m in Model::ALL {
            // The default is always acceptable, and nothing below the
            // minimum is ever run.
            assert_eq!(m.check_workers(m.default_workers()), Ok(()), "{m}");
            assert!(m.workers(None) >= m.min_workers(), "{m}");
            assert!(m.check_workers(m.min_workers()).is_ok(), "{m}");
            if m.min_workers() > 0 {
                let e = m.check_workers(m.min_workers() - 1).unwrap_err();
                let says = format!("for {m} (at least {})", e.min);
                assert!(e.to_string().ends_with(&says), "{e}");
            }
        }
    }
}
