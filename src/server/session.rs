//! One connection's request/response exchange, whatever its IO: decodes
//! events, calls the handlers, queues responses, keeps the deadlines, and
//! holds blocking work (`Task`) for the model to run. Every model uses it.

use std::sync::Arc;
use std::time::Instant;

use super::deadlines::{header_allowance, Pace, RateWindow};
use super::handlers::{route, Action, App, Body, BodySink, Reply, Response};
use super::outq::OutQueue;
use super::task::{Task, TaskDone};
use crate::http::response::HEAD_FIXED_MAX;
use crate::http::{encode_streamed, BodyLength, Event, Limits, Phase, RequestHead, ServerConn};

/// The body of the request being read and what to do when it ends.
enum Pending {
    /// The handler consumes the body.
    Sink(Box<dyn BodySink>),
    /// Already answered (or deferred): the body is read and dropped so the
    /// connection can stay open.
    Discard(Reply),
    /// The response (`/echo`'s) is the body itself.
    Echo(Echo),
}

/// Most of an `/echo` body held before its response starts: a shorter body
/// is answered whole with a Content-Length; a longer one is streamed as it
/// is read, which bounds what a connection holds.
pub const ECHO_HOLD: usize = 64 * 1024;

/// An `/echo` exchange: its response head, and the body held so far or,
/// once streaming, whether its pieces are chunked.
struct Echo {
    resp: Response,
    held: Vec<u8>,
    chunked: Option<bool>,
}

/// What a model does next for a connection (`Session::next`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Send the queued output (`out`), then `process` what it held back.
    Send,
    /// Receive: into the worker's lent buffer between requests
    /// (`conn.is_between_requests`), else into `conn.read_buf`.
    Recv,
    /// Nothing until a task's result, a deadline or shutdown.
    Wait,
    /// The exchange is over: close, with the linger if `conn.should_linger`.
    Close,
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
    /// Send `Connection: close` next: others wait, or shutdown began.
    close_next: bool,
    /// A deadline passed; the connection ends once the 408 (if any) is out.
    finished: bool,
    /// A response was sent, so the client knows to retry if it is closed.
    answered: bool,
    phase: Phase,
    phase_since: Instant,
    /// Bytes of the current head, which earn it time at `min_header_rate`.
    head_bytes: u64,
    /// The body being read must keep up with `min_body_rate`.
    body: RateWindow,
    /// When the connection was accepted; its first request is timed from it.
    accepted: Instant,
    /// No request head has been decoded yet.
    first_request: bool,
    /// The body being read, held to `min_body_rate` on average (`Pace`).
    pace: Option<Pace>,
    /// Bytes the model saw waiting in the socket, unread (`note_unread`).
    unread: u64,
    /// When the task that is out began, so its time is not the client's.
    waiting_since: Option<Instant>,
    /// Queued output must go at `min_send_rate`; None while none is queued.
    send: Option<RateWindow>,
    /// Output still queued when last looked at, to see progress.
    queued: u64,
}

impl Session {
    pub fn new(limits: impl Into<Arc<Limits>>) -> Self {
        Self::accepted_at(limits, Instant::now())
    }

    /// A session whose clocks started when the connection was accepted,
    /// which may be before it reached a worker (a thread pool's queue).
    pub fn accepted_at(limits: impl Into<Arc<Limits>>, now: Instant) -> Self {
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
            head_bytes: 0,
            body: RateWindow::new(now),
            accepted: now,
            first_request: true,
            pace: None,
            unread: 0,
            waiting_since: None,
            send: None,
            queued: 0,
        }
    }

    /// Ask for the connection to end after the next response it sends.
    pub fn close_after_response(&mut self) {
        self.close_next = true;
    }

    /// Decodes and answers as many requests as the buffered input holds,
    /// stopping when output backs up or a task is out.
    pub fn process(&mut self, app: &App) {
        // Called after every drained response: usually nothing to decode.
        if self.conn.is_between_requests() {
            return;
        }
        while !self.out.is_full() && !self.waiting {
            match self.conn.next_event() {
                Event::Head(head) => {
                    self.head_only = head.is_head();
                    let has_body = head.body != BodyLength::Empty;
                    self.start_pace(&head, has_body);
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
                        // The next head reuses this one's buffers.
                        self.conn.recycle(head);
                        // Nothing pipelined behind it: skip the decode.
                        if self.conn.is_between_requests() {
                            break;
                        }
                        continue;
                    }
                    // An unused body is dropped, bounded by `max_body`; a
                    // client waiting for 100 is answered now and sends none.
                    let max = self.conn.limits().max_body;
                    if self.admit(&head, max, false) {
                        if head.expect_continue {
                            self.answer(reply);
                        } else {
                            self.pending = Some(Pending::Discard(reply));
                        }
                    }
                }
                Event::Data(chunk) => {
                    if let Some(p) = &mut self.pace {
                        p.add(chunk.len() as u64);
                    }
                    match &mut self.pending {
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
                            Some(chunked) => {
                                self.out.encode(|b| encode_streamed(b, chunk, chunked))
                            }
                            None => {
                                echo.held.extend_from_slice(chunk);
                                if echo.held.len() > ECHO_HOLD {
                                    self.stream_echo();
                                }
                            }
                        },
                        Some(Pending::Discard(_)) | None => {}
                    }
                }
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

    /// Starts a body's average-rate clock: the first request's from
    /// acceptance (time queued for a worker counts), later ones' from now.
    /// The head's bytes count too.
    fn start_pace(&mut self, head: &RequestHead, has_body: bool) {
        let first = std::mem::take(&mut self.first_request);
        self.pace = has_body.then(|| {
            let since = if first { self.accepted } else { Instant::now() };
            Pace::new(since, head.wire_len())
        });
    }

    /// Bounds the body to `max`: a larger declared length gets 413 at once,
    /// before a client waiting for 100 sends it; a chunked one is refused
    /// once a chunk crosses it. With `wanted`, 100 is sent. False if refused.
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
        self.waiting_since = Some(Instant::now());
    }

    /// The blocking work the handlers left, for the model to run (at most
    /// one at a time per connection). Hand its result to `complete`.
    pub fn take_task(&mut self) -> Option<Task> {
        self.task.take()
    }

    /// The handlers left a task that has not been taken yet.
    pub fn has_task(&self) -> bool {
        self.task.is_some()
    }

    /// A task's result: queues its response, lets the body go on, or on a
    /// failed step ends the connection (the rest of the body is unread).
    /// Dropped if the connection timed out meanwhile.
    pub fn complete(&mut self, done: TaskDone) {
        if !std::mem::take(&mut self.waiting) || self.finished {
            return;
        }
        let began = self.waiting_since.take();
        match done {
            TaskDone::Answer(resp) => self.respond(resp),
            // The body's clocks leave the wait out: it was the server's.
            TaskDone::Step(Ok(())) => {
                let now = Instant::now();
                self.body = RateWindow::new(now);
                if let (Some(p), Some(began)) = (&mut self.pace, began) {
                    p.pause(now.saturating_duration_since(began));
                }
            }
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
        let (status, len) = (resp.status, resp.body.len());
        let head = |b: &mut Vec<u8>| {
            self.conn.write_head(b, status, len, &resp.headers, close);
        };
        match if head_only { Body::Empty } else { resp.body } {
            Body::Bytes(b) => {
                let head_max = HEAD_FIXED_MAX + resp.headers.len();
                self.out.push_head_and_bytes(head_max, head, b);
            }
            body => {
                self.out.encode(head);
                match body {
                    Body::Empty | Body::Bytes(_) => {}
                    Body::File { file, offset, len } => self.out.push_file(file, offset, len),
                    Body::Repeated { unit, offset, len } => {
                        self.out.push_repeated(&unit, offset, len)
                    }
                }
            }
        }
        if self.conn.phase() == Phase::Closed {
            self.out.set_last();
        }
    }

    /// Whether a response was sent: only then may an idle connection be
    /// closed to free its worker (its client retries, RFC 9112 9.3.1); a
    /// fresh one's request may be on its way.
    pub fn has_answered(&self) -> bool {
        self.answered
    }

    /// What the connection needs next, in the order every model follows:
    /// queued output first (later output waits behind it), close once done,
    /// then read if that helps; `stopping` makes the next response close.
    pub fn next(&mut self, stopping: bool) -> Next {
        if !self.out.is_empty() {
            return Next::Send;
        }
        if self.is_done() {
            return Next::Close;
        }
        if stopping {
            self.close_after_response();
        }
        if self.conn.wants_read() {
            Next::Recv
        } else {
            Next::Wait
        }
    }

    /// The connection has nothing left to do once its output is flushed.
    pub fn is_done(&self) -> bool {
        self.finished || self.conn.phase() == Phase::Closed
    }

    /// Records that `n` bytes arrived (before they are processed).
    pub fn on_read(&mut self, now: Instant, n: usize) {
        self.unread = 0;
        self.observe(now);
        let l = self.conn.limits();
        match self.phase {
            Phase::Head => self.head_bytes += n as u64,
            Phase::Body => self
                .body
                .add(now, n as u64, l.body_timeout, l.min_body_rate),
            _ => {}
        }
    }

    /// Records `n` bytes waiting unread in the socket (FIONREAD), until the
    /// next read: an upload queued for a worker sent them in time, so they
    /// count toward its average rate.
    pub fn note_unread(&mut self, n: u64) {
        self.unread = n;
    }

    /// Records that output made progress.
    pub fn on_write(&mut self, now: Instant) {
        self.observe(now);
    }

    /// Starts a new phase's clock and notes output progress: `deadline`'s
    /// first step, for a model that needs the clocks but not the deadline.
    pub fn observe(&mut self, now: Instant) {
        let phase = self.conn.phase();
        if phase != self.phase {
            // A first head is timed from acceptance, so the bound is not
            // first-byte plus header timeout; later phases from their start.
            let first_head = phase == Phase::Head && self.phase == Phase::Idle && !self.answered;
            if !first_head {
                self.phase_since = now;
            }
            self.phase = phase;
            self.head_bytes = 0;
            self.body = RateWindow::new(now);
        }
        let queued = self.out.queued();
        if self.out.is_empty() {
            self.send = None;
        } else if let Some(w) = &mut self.send {
            let l = self.conn.limits();
            let sent = self.queued.saturating_sub(queued);
            w.add(now, sent, l.send_timeout, l.min_send_rate);
        } else {
            self.send = Some(RateWindow::new(now));
        }
        self.queued = queued;
    }

    /// When the current phase's timeout expires, if it has one; call after
    /// every round of IO so phase changes start their clocks. The rules:
    /// - the first byte comes within `first_byte_timeout`;
    /// - a head within `header_timeout`, extended at `min_header_rate` up to
    ///   `header_timeout_max`, from its first byte so a trickle cannot hold
    ///   the slot (the first request's from acceptance);
    /// - body and response keep `min_body_rate`/`min_send_rate` per window;
    /// - a body averages `min_body_rate` after a grace of `header_timeout`,
    ///   so a slow body frees a blocking worker about as soon as a slow head;
    /// - a keep-alive connection idles at most `idle_timeout`.
    pub fn deadline(&mut self, now: Instant) -> Option<Instant> {
        self.observe(now);
        if self.waiting {
            return None; // the server is the slow party
        }
        let l = self.conn.limits();
        if let Some(w) = &self.send {
            return Some(w.deadline(l.send_timeout));
        }
        match self.phase {
            Phase::Idle if !self.answered => Some(self.phase_since + l.first_byte_timeout),
            Phase::Idle => Some(self.phase_since + l.idle_timeout),
            Phase::Head => Some(
                self.phase_since
                    + header_allowance(
                        l.header_timeout,
                        l.header_timeout_max,
                        l.min_header_rate,
                        self.head_bytes,
                    ),
            ),
            Phase::Body => {
                let window = self.body.deadline(l.body_timeout);
                let unread = self.conn.buffered() as u64 + self.unread;
                let pace = self
                    .pace
                    .and_then(|p| p.deadline(l.header_timeout, l.min_body_rate, unread));
                Some(pace.map_or(window, |p| p.min(window)))
            }
            Phase::Respond | Phase::Closed => None,
        }
    }

    /// Whether the deadline (`deadline`) has passed at `now`.
    pub fn is_expired(&mut self, now: Instant) -> bool {
        self.deadline(now).is_some_and(|d| now >= d)
    }

    /// Between requests with nothing to send: closed first when stopping.
    pub fn is_idle(&self) -> bool {
        self.conn.phase() == Phase::Idle && self.out.is_empty()
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

#[cfg(test)]
mod tests;
