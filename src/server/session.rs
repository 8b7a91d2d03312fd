//! One connection's request/response exchange, independent of how its IO
//! is done: decodes events, calls the handlers, queues the responses, and
//! keeps the deadlines. Every model drives this same type.
//!
//! A handler may answer with blocking work (a `Job`), and a body sink may
//! need some done before it takes more (a `Step`). The session then waits:
//! `process` decodes nothing more until the model has taken the `Task`
//! (`take_task`), run it wherever suits its IO, and handed back the result
//! (`complete`). While it waits no read deadline runs (the server, not the
//! client, is the slow party); the models' shutdown grace still bounds it.

use std::time::{Duration, Instant};

use super::handlers::{route, Action, App, Body, BodySink, Reply, Response};
use super::outq::OutQueue;
use super::task::{Task, TaskDone};
use crate::http::{encode_streamed, BodyLength, Event, Limits, Phase, RequestHead, ServerConn};

/// Longest time queued output may make no progress before the peer is
/// taken to be gone.
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The body of the request being read and what to do when it ends.
enum Pending {
    /// The handler consumes the body.
    Sink(Box<dyn BodySink>),
    /// The handler already answered (or will, once its job has run); the
    /// body is read and thrown away so the connection can be kept alive.
    Discard(Reply),
    /// The response (`/echo`'s) is the body itself.
    Echo(Echo),
}

/// Most of an `/echo` body held before its response starts. A body that
/// ends within it is answered whole, with a Content-Length (and a request
/// that fails within it with its error status); past it the response head
/// goes out and the body follows as it is read, so a connection never
/// holds more than this, one read and its output queue.
pub const ECHO_HOLD: usize = 64 * 1024;

/// An `/echo` exchange: its response head, and the body held so far or,
/// once streaming, whether its pieces are chunked.
struct Echo {
    resp: Response,
    held: Vec<u8>,
    chunked: Option<bool>,
}

pub struct Session {
    pub conn: ServerConn,
    pub out: OutQueue,
    pending: Option<Pending>,
    /// Blocking work for the model to run, not yet taken.
    task: Option<Task>,
    /// A task is out: nothing more is decoded until `complete`.
    waiting: bool,
    head_only: bool,
    /// Send `Connection: close` on the next response: set when others are
    /// waiting for this worker or the server is shutting down.
    close_next: bool,
    /// A deadline passed; the connection ends once the 408 (if any) is out.
    finished: bool,
    /// At least one response was sent: the connection is a keep-alive
    /// connection whose client knows to retry on another one.
    answered: bool,
    phase: Phase,
    phase_since: Instant,
    last_read: Instant,
    last_write: Instant,
}

impl Session {
    pub fn new(limits: Limits) -> Self {
        let now = Instant::now();
        Session {
            conn: ServerConn::new(limits),
            out: OutQueue::default(),
            pending: None,
            task: None,
            waiting: false,
            head_only: false,
            close_next: false,
            finished: false,
            answered: false,
            phase: Phase::Idle,
            phase_since: now,
            last_read: now,
            last_write: now,
        }
    }

    /// Ask for the connection to end after the next response it sends.
    pub fn close_after_response(&mut self) {
        self.close_next = true;
    }

    /// Decodes and answers as many requests as the buffered input holds,
    /// stopping when output backs up or a task is out.
    pub fn process(&mut self, app: &App) {
        while !self.out.is_full() && !self.waiting {
            match self.conn.next_event() {
                Event::Head(head) => {
                    self.head_only = head.is_head();
                    let has_body = head.body != BodyLength::Empty;
                    let reply = match route(app, &head) {
                        Action::Respond(resp) => Reply::Ready(resp),
                        Action::Defer(job) => Reply::Defer(job),
                        Action::ReadBody(sink) => {
                            if self.admit(&head, sink.max_body(), true) {
                                self.pending = Some(Pending::Sink(sink));
                            }
                            continue;
                        }
                        Action::Echo {
                            head: resp,
                            max_body,
                        } => {
                            if self.admit(&head, max_body, true) {
                                self.pending = Some(Pending::Echo(Echo {
                                    resp,
                                    held: Vec::new(),
                                    chunked: None,
                                }));
                            }
                            continue;
                        }
                    };
                    if !has_body {
                        self.answer(reply);
                        continue;
                    }
                    // A body the route does not use is thrown away, and
                    // refused past the same bound whether or not the client
                    // waits for 100; one that waits is answered at once
                    // instead and sends no body.
                    let max = self.conn.limits().max_body;
                    if self.admit(&head, max, false) {
                        if head.expect_continue {
                            self.answer(reply);
                        } else {
                            self.pending = Some(Pending::Discard(reply));
                        }
                    }
                }
                Event::Data(chunk) => match &mut self.pending {
                    Some(Pending::Sink(sink)) => match sink.data(chunk) {
                        Err(resp) => {
                            self.pending = None;
                            self.respond(resp.closing());
                        }
                        Ok(()) => {
                            if let Some(step) = sink.take_step() {
                                self.wait_for(Task::Step(step));
                            }
                        }
                    },
                    Some(Pending::Echo(echo)) => match echo.chunked {
                        Some(chunked) => self.out.encode(|b| encode_streamed(b, chunk, chunked)),
                        None => {
                            echo.held.extend_from_slice(chunk);
                            if echo.held.len() > ECHO_HOLD {
                                self.stream_echo();
                            }
                        }
                    },
                    Some(Pending::Discard(_)) | None => {}
                },
                Event::End => {
                    let reply = match self.pending.take() {
                        Some(Pending::Sink(sink)) => sink.finish(),
                        Some(Pending::Discard(reply)) => reply,
                        Some(Pending::Echo(Echo {
                            resp,
                            held,
                            chunked: None,
                        })) => Reply::Ready(resp.body(Body::Bytes(held.into()))),
                        Some(Pending::Echo(_)) => {
                            self.out.encode(|b| self.conn.finish_streaming(b));
                            if self.conn.phase() == Phase::Closed {
                                self.out.set_last();
                            }
                            continue;
                        }
                        None => continue,
                    };
                    self.answer(reply);
                }
                Event::Error(e) => {
                    // Dropping the sink aborts an upload, leaving nothing.
                    self.pending = None;
                    self.out.encode(|b| self.conn.write_error(b, &e));
                    self.out.set_last();
                    break;
                }
                Event::NeedData | Event::Paused | Event::Closed => break,
            }
        }
    }

    /// Bounds the request body to `max` bytes: a declared length past it
    /// is answered with 413 at once (the conn would refuse it at the first
    /// body byte anyway, and a client waiting for 100 then sends nothing);
    /// a chunked one is refused when a chunk crosses it. With `wanted`, a
    /// client waiting for 100 gets it. Returns false if refused.
    fn admit(&mut self, head: &RequestHead, max: u64, wanted: bool) -> bool {
        self.conn.set_max_body(max);
        if matches!(head.body, BodyLength::Length(n) if n > max) {
            self.respond(Response::error(413));
            return false;
        }
        if wanted && head.expect_continue {
            self.out.encode(|b| self.conn.write_continue(b));
        }
        true
    }

    /// An `/echo` body outgrew `ECHO_HOLD`: its response head goes out with
    /// what is held, and the rest follows piece by piece as it is decoded.
    fn stream_echo(&mut self) {
        let Some(Pending::Echo(echo)) = &mut self.pending else {
            return;
        };
        self.answered = true;
        let close = echo.resp.close || self.close_next;
        let (resp, held) = (&echo.resp, std::mem::take(&mut echo.held));
        let chunked = self.out.encode(|b| {
            let chunked = self
                .conn
                .write_streaming_head(b, resp.status, &resp.headers, close);
            encode_streamed(b, &held, chunked);
            chunked
        });
        echo.chunked = Some(chunked);
    }

    fn answer(&mut self, reply: Reply) {
        match reply {
            Reply::Ready(resp) => self.respond(resp),
            Reply::Defer(job) => self.wait_for(Task::Answer(job)),
        }
    }

    fn wait_for(&mut self, task: Task) {
        self.task = Some(task);
        self.waiting = true;
    }

    /// The blocking work the handlers left, for the model to run (at most
    /// one at a time per connection). Hand its result to `complete`.
    pub fn take_task(&mut self) -> Option<Task> {
        self.task.take()
    }

    /// A task's result: a response is queued, a finished step lets the
    /// body go on, a failed one ends the exchange (and the connection, as
    /// the rest of the body is not read). `process` may then go on. A
    /// result for a connection that has meanwhile timed out is dropped.
    pub fn complete(&mut self, done: TaskDone) {
        if !std::mem::take(&mut self.waiting) || self.finished {
            return;
        }
        match done {
            TaskDone::Answer(resp) => self.respond(resp),
            // The body's clock restarts: the wait was the server's.
            TaskDone::Step(Ok(())) => self.last_read = Instant::now(),
            TaskDone::Step(Err(resp)) => {
                // Dropping the sink aborts an upload, leaving nothing.
                self.pending = None;
                self.respond(resp.closing());
            }
        }
    }

    fn respond(&mut self, resp: Response) {
        self.answered = true;
        let close = resp.close || self.close_next;
        let head_only = self.head_only || crate::http::response::status_has_no_body(resp.status);
        self.out.encode(|b| {
            self.conn
                .write_head(b, resp.status, resp.body.len(), &resp.headers, close)
        });
        if self.conn.phase() == Phase::Closed {
            self.out.set_last();
        }
        if head_only {
            return;
        }
        match resp.body {
            Body::Empty => {}
            Body::Bytes(b) => self.out.push_bytes(b),
            Body::File { file, offset, len } => self.out.push_file(file, offset, len),
            Body::Repeated { unit, offset, len } => self.out.push_repeated(&unit, offset, len),
        }
    }

    /// Whether a response has been sent on this connection. An idle
    /// connection that has had one may be closed to free its worker (its
    /// client retries elsewhere, RFC 9112 9.3.1); a fresh one has not sent
    /// its request yet and closing it would lose that request.
    pub fn has_answered(&self) -> bool {
        self.answered
    }

    /// The connection has nothing left to do once its output is flushed.
    pub fn is_done(&self) -> bool {
        self.finished || self.conn.phase() == Phase::Closed
    }

    /// Records that bytes arrived.
    pub fn on_read(&mut self, now: Instant) {
        self.last_read = now;
    }

    /// Records that output made progress.
    pub fn on_write(&mut self, now: Instant) {
        self.last_write = now;
    }

    /// When the current phase's timeout expires, if it has one. Call after
    /// every round of IO so phase changes start their clocks.
    pub fn deadline(&mut self, now: Instant) -> Option<Instant> {
        let phase = self.conn.phase();
        if phase != self.phase {
            self.phase = phase;
            self.phase_since = now;
        }
        if !self.out.is_empty() {
            return Some(self.last_write.max(self.phase_since) + WRITE_STALL_TIMEOUT);
        }
        if self.waiting {
            return None; // the server is the slow party
        }
        let l = self.conn.limits();
        match phase {
            Phase::Idle => Some(self.phase_since + l.idle_timeout),
            // Measured from the first byte of the head, not the last, so a
            // client trickling one byte at a time cannot hold the slot.
            Phase::Head => Some(self.phase_since + l.header_timeout),
            Phase::Body => Some(self.last_read.max(self.phase_since) + l.body_timeout),
            Phase::Respond | Phase::Closed => None,
        }
    }

    /// The deadline passed: answer 408 if a request was partly received.
    /// The connection is finished afterwards.
    pub fn on_timeout(&mut self) {
        self.pending = None;
        // An unrun task is dropped: an upload's temporary file goes with it.
        self.task = None;
        self.finished = true;
        self.out.set_last();
        if self.out.is_empty() {
            if let Some(e) = self.conn.timeout_error() {
                self.out.encode(|b| self.conn.write_error(b, &e));
            }
        }
    }
}
