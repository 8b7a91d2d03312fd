//! The model registry's metadata: every concurrency model's name and
//! worker rules, below the jobs so that the CLI, the lab, stress and the
//! report list models from one place without importing the server.

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
}

impl Model {
    pub const ALL: [Model; 6] = [
        Model::Iterative,
        Model::ThreadPerConn,
        Model::ThreadPool,
        Model::Prefork,
        Model::EventLoop,
        Model::Reactors,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Model::Iterative => "iterative",
            Model::ThreadPerConn => "thread-per-conn",
            Model::ThreadPool => "thread-pool",
            Model::Prefork => "prefork",
            Model::EventLoop => "event-loop",
            Model::Reactors => "reactors",
        }
    }

    /// Workers when `--workers` is not given: one per core for the pools of
    /// processes and reactors (nginx's `worker_processes auto`), four per
    /// core for a thread pool, whose threads block on IO.
    pub fn default_workers(self) -> usize {
        let cores = crate::sys::cores();
        match self {
            Model::Iterative | Model::EventLoop | Model::ThreadPerConn => 1,
            Model::ThreadPool => 4 * cores,
            Model::Prefork | Model::Reactors => cores,
        }
    }

    /// Workers actually used for a `--workers` value.
    pub fn effective_workers(self, requested: usize) -> usize {
        match self {
            Model::Iterative | Model::EventLoop => 1,
            Model::ThreadPerConn => 0,
            // 0 is meaningful: a pool that grows on demand.
            Model::ThreadPool => requested,
            Model::Prefork | Model::Reactors => requested.max(1),
        }
    }

    /// Whether the model's listener must allow SO_REUSEPORT siblings.
    pub fn needs_reuseport(self) -> bool {
        self == Model::Reactors
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
        Model::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Model::ALL.iter().map(|m| m.name()).collect();
                format!(
                    "unknown model '{s}' (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}
