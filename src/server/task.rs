//! Blocking work a `Session` needs done before it can go on, run on the
//! connection's thread by blocking models and on an `offload` thread by
//! event loops; the result goes back to `Session::complete`.

use super::handlers::{Job, Response, Step};

/// A handler's final work (`Answer`: the response comes from it) or a
/// piece of a request body's work (`Step`: decoding goes on after it).
pub enum Task {
    Answer(Job),
    Step(Step),
}

/// What a task gave back.
pub enum TaskDone {
    Answer(Response),
    Step(Result<(), Response>),
}

impl Task {
    /// Does the work; blocks for as long as it takes.
    pub fn run(self) -> TaskDone {
        match self {
            Task::Answer(job) => TaskDone::Answer(job()),
            Task::Step(step) => TaskDone::Step(step()),
        }
    }

    /// The result of a task that could not run (refused, or panicked):
    /// `resp` answers instead, and the work is dropped (temp files too).
    pub fn failed(kind: TaskKind, resp: Response) -> TaskDone {
        match kind {
            TaskKind::Answer => TaskDone::Answer(resp),
            TaskKind::Step => TaskDone::Step(Err(resp)),
        }
    }

    pub fn kind(&self) -> TaskKind {
        match self {
            Task::Answer(_) => TaskKind::Answer,
            Task::Step(_) => TaskKind::Step,
        }
    }
}

/// Which kind a task is, kept when the task itself is gone.
#[derive(Debug, Clone, Copy)]
pub enum TaskKind {
    Answer,
    Step,
}
