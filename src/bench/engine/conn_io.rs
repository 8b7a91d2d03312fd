//! The load engine's per-connection IO: connect, send, receive, complete
//! or fail a request, and close. A child of the engine, so it works on the
//! worker's own state without widening its visibility.

use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mio::{Interest, Token};

use super::tls_io;
use super::{is_peer_close, Failure, Phase, Worker, NO_LENGTH};
use crate::bench::records::Record;

use crate::bench::violations::{self, Violation};
use crate::http::client::{flaw_example, ResponseError, ResponseInfo};

impl Worker<'_> {
    /// Sends the request on `i` over a fresh connection.
    pub(super) fn reconnect(&mut self, i: usize) {
        self.conns[i].reused = false;
        self.close_socket(i);
        self.connect(i);
    }

    /// Opens a fresh connection for the request on `i`.
    pub(super) fn connect(&mut self, i: usize) {
        self.stats.connects += 1;
        match self.shared.dial.connect(self.shared.addr) {
            Ok(mut s) => {
                let _ = s.set_nodelay(true);
                match self.poll.registry().register(
                    &mut s,
                    Token(i),
                    Interest::READABLE | Interest::WRITABLE,
                ) {
                    Ok(()) => {
                        let c = &mut self.conns[i];
                        c.stream = Some(s);
                        c.writable = true;
                        c.phase = Phase::Connecting;
                    }
                    Err(e) => self.fail(i, Failure::Connect, format!("connect: {e}")),
                }
            }
            Err(e) => self.fail(i, Failure::Connect, format!("connect: {e}")),
        }
    }

    /// Adds or drops WRITABLE from what `i` is polled for; false if that
    /// failed (the request is then failed).
    pub(super) fn want_writable(&mut self, i: usize, yes: bool) -> bool {
        let c = &mut self.conns[i];
        let Some(s) = c.stream.as_mut() else {
            return false;
        };
        if c.writable == yes {
            return true;
        }
        let interest = if yes {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        match self.poll.registry().reregister(s, Token(i), interest) {
            Ok(()) => {
                c.writable = yes;
                true
            }
            Err(e) => {
                self.fail(i, Failure::Exception, format!("poll: {e}"));
                false
            }
        }
    }

    /// The server closed the connection before any byte of the response.
    /// On a kept-alive connection that is the server shutting an idle
    /// connection as the request crossed it (ab: "server has legitimately
    /// shut down an idle keep alive request"), not a failed request, so the
    /// request is sent again on a fresh connection. That one is not reused,
    /// so a second close before any byte is a real failure: one retry at
    /// most.
    pub(super) fn closed_unanswered(&mut self, i: usize, kind: Failure, msg: String) {
        let c = &mut self.conns[i];
        if !(c.reused && c.t_first.is_none()) {
            return self.fail(i, kind, msg);
        }
        if c.counted {
            self.stats.keep_alive_retries += 1;
        }
        c.t_start = Instant::now();
        c.t_active = c.t_start;
        c.parser.reset();
        self.reconnect(i);
    }

    pub(super) fn on_ready(&mut self, i: usize, ev: &mio::event::Event) {
        let trouble = ev.is_error() || ev.is_read_closed() || ev.is_write_closed();
        match self.conns[i].phase {
            Phase::Connecting => self.on_connect(i),
            Phase::Tunneling if ev.is_readable() || trouble => self.tunnel_read(i),
            Phase::Handshaking => self.handshake(i),
            Phase::Sending(_) => {
                // A server may answer before the request is all sent (an
                // early 413, or /echo streaming the body back): read it
                // now, since its edge will not come again, and since a
                // server whose output is full stops reading the rest.
                if ev.is_readable() || trouble {
                    self.receive(i);
                }
                let still_sending = matches!(self.conns[i].phase, Phase::Sending(_));
                if still_sending && (ev.is_writable() || trouble) {
                    self.send(i);
                }
            }
            // The ACK of the request alone makes the socket writable; a
            // read then would find nothing.
            Phase::Receiving if ev.is_readable() || trouble => self.receive(i),
            // Nothing awaited on this socket, or not this kind of event.
            _ => {}
        }
    }

    pub(super) fn on_connect(&mut self, i: usize) {
        let Some(s) = self.conns[i].stream.as_ref() else {
            return;
        };
        match s.take_error() {
            Ok(Some(e)) | Err(e) => return self.fail(i, Failure::Connect, format!("connect: {e}")),
            Ok(None) => {}
        }
        match s.peer_addr() {
            Ok(_) => {}
            // Not connected yet: a spurious wake-up; wait for the next edge.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
            Err(e) => return self.fail(i, Failure::Connect, format!("connect: {e}")),
        }
        self.after_tcp(i);
    }

    /// The connection is up (TCP, and TLS when asked): the request goes.
    pub(super) fn connected(&mut self, i: usize) {
        // A kept-alive connection listens for responses only: with WRITABLE
        // too, the ACK of every request wakes the loop for nothing. One
        // epoll_ctl per connection pays for itself over its requests, but
        // not over the single request of a connection without -k.
        if self.shared.keep_alive && !self.want_writable(i, false) {
            return;
        }
        let c = &mut self.conns[i];
        c.t_connected = self.woke;
        c.t_active = self.woke;
        c.phase = Phase::Sending(0);
        self.send(i);
    }

    pub(super) fn send(&mut self, i: usize) {
        let req = &self.shared.request;
        let c = &mut self.conns[i];
        let Phase::Sending(mut off) = c.phase else {
            return;
        };
        let Some(s) = c.stream.as_mut() else { return };
        let mut tls = c.tls.as_deref_mut();
        while off < req.len() {
            match tls_io::write(s, tls.as_deref_mut(), &req[off..]) {
                Ok(0) => {
                    let msg = "send: connection closed".into();
                    return self.closed_unanswered(i, Failure::Exception, msg);
                }
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if off > 0 {
                        c.t_active = Instant::now();
                    }
                    c.phase = Phase::Sending(off);
                    self.want_writable(i, true);
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_peer_close(&e) => {
                    let msg = format!("send: {e}");
                    return self.closed_unanswered(i, Failure::Exception, msg);
                }
                Err(e) => return self.fail(i, Failure::Exception, format!("send: {e}")),
            }
        }
        // Under TLS the last records may still wait for room.
        match tls_io::flush(s, tls) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                c.phase = Phase::Sending(off);
                self.want_writable(i, true);
                return;
            }
            Err(e) => return self.fail(i, Failure::Exception, format!("send: {e}")),
        }
        if c.counted && self.shared.sends_body {
            self.stats.body_sent += req.len() as u64;
        }
        c.t_sent = Instant::now();
        c.t_active = c.t_sent;
        // No read here: the response cannot have arrived in the microsecond
        // since the write, and its arrival raises an edge of its own. A
        // speculative read would cost one failing syscall per request.
        c.phase = Phase::Receiving;
    }

    pub(super) fn receive(&mut self, i: usize) {
        loop {
            let c = &mut self.conns[i];
            let Some(s) = c.stream.as_mut() else { return };
            let n = match tls_io::read(s, c.tls.as_deref_mut(), &mut self.buf) {
                Ok(0) => {
                    return match c.parser.feed_eof() {
                        Ok(Some(info)) => self.complete(i, info, false),
                        Ok(None) => self.closed_unanswered(
                            i,
                            Failure::Receive,
                            "receive: connection closed before the response".into(),
                        ),
                        Err(e) => self.fail(i, Failure::Receive, format!("receive: {e}")),
                    };
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if is_peer_close(&e) => {
                    let msg = format!("receive: {e}");
                    return self.closed_unanswered(i, Failure::Receive, msg);
                }
                Err(e) => return self.fail(i, Failure::Receive, format!("receive: {e}")),
            };
            if c.t_first.is_none() {
                c.t_first = Some(self.woke);
            }
            if self.shared.log.on() {
                self.shared
                    .log
                    .response_bytes(&mut c.head_log, &self.buf[..n]);
            }
            c.t_active = self.woke;
            let mut off = 0;
            while off < n {
                match c.parser.feed(&self.buf[off..n]) {
                    Ok((used, Some(info))) => {
                        // Bytes after a complete response were not asked
                        // for: the server framed it wrong (a body longer
                        // than its Content-Length). The answer arrived
                        // whole, so it counts, with a violation; where the
                        // next response starts is unknown, so the
                        // connection is dropped.
                        let extra = off + used < n;
                        if extra {
                            let first = c.counted
                                && !self
                                    .stats
                                    .violations
                                    .contains_key(Violation::BytesAfterBody.name());
                            let example = first.then(|| flaw_example(&self.buf[off + used..n]));
                            self.violated(i, Violation::BytesAfterBody, example);
                            // Closed for it where it would have been kept.
                            if self.conns[i].counted && self.shared.keep_alive && info.keep_alive {
                                self.stats.violation_closes += 1;
                            }
                        }
                        // Answered before the request was all sent: the
                        // connection is out of step and cannot be reused.
                        let reusable = self.conns[i].phase == Phase::Receiving && !extra;
                        return self.complete(i, info, reusable);
                    }
                    Ok((used, None)) => off += used,
                    Err(e) => {
                        let kind = match e {
                            ResponseError::Incomplete => Failure::Receive,
                            _ => Failure::Exception,
                        };
                        return self.fail(i, kind, format!("response: {e}"));
                    }
                }
            }
        }
    }

    /// Counts violation `v` of the answer on `i` (a counted request only).
    fn violated(&mut self, i: usize, v: Violation, example: Option<String>) {
        if !self.conns[i].counted {
            return;
        }
        violations::record(&mut self.stats.violations, v, example.as_deref());
        if self.shared.strict {
            self.strict_kinds.push(v.name());
        }
    }

    pub(super) fn complete(&mut self, i: usize, mut info: ResponseInfo, reusable: bool) {
        if !info.flaws.is_empty() {
            let example = info.flaw_example.take();
            for v in Violation::of_flaws(info.flaws) {
                self.violated(i, v, example.clone());
            }
        }
        // --strict: an answer that broke a rule is a failed request.
        if !self.strict_kinds.is_empty() {
            let kinds = self.strict_kinds.join(", ");
            self.strict_kinds.clear();
            return self.fail(
                i,
                Failure::Exception,
                format!("violation (--strict): {kinds}"),
            );
        }
        let now = self.woke;
        let c = &mut self.conns[i];
        c.phase = Phase::Free;
        let keep = reusable && self.shared.keep_alive && info.keep_alive;
        if self.shared.log.on() {
            self.shared.log.status(info.status);
        }
        if c.counted {
            let st = &mut self.stats;
            let us = |d: Duration| d.as_micros() as u64;
            let total = us(now.saturating_duration_since(c.t_start));
            let connect = if c.reused {
                0
            } else {
                us(c.t_connected - c.t_start)
            };
            let waiting = c
                .t_first
                .map_or(0, |f| us(f.saturating_duration_since(c.t_sent)));
            st.latency.total.saturating_record(total);
            st.latency.connect.saturating_record(connect);
            st.latency.waiting.saturating_record(waiting);
            st.latency
                .processing
                .saturating_record(total.saturating_sub(connect));
            let behind = us(c.t_start.saturating_duration_since(c.t_intended));
            st.latency.record_corrected(behind, total, connect);
            if self.records.on() {
                let u32_us = |d: Duration| u32::try_from(d.as_micros()).unwrap_or(u32::MAX);
                self.records.push(Record {
                    start_us: us(c
                        .t_start
                        .saturating_duration_since(self.shared.measure_start)),
                    total_us: u32::try_from(total).unwrap_or(u32::MAX),
                    connect_us: u32::try_from(connect).unwrap_or(u32::MAX),
                    write_us: u32_us(c.t_sent.saturating_duration_since(c.t_connected)),
                    wait_us: u32::try_from(waiting).unwrap_or(u32::MAX),
                    lag_us: u32::try_from(behind).unwrap_or(u32::MAX),
                    status: info.status,
                    body_bytes: info.body_bytes,
                });
            }
            st.complete += 1;
            let class = (info.status / 100) as usize;
            st.status_classes[if (1..=5).contains(&class) { class } else { 0 }] += 1;
            st.status_codes.record(info.status);
            if !(200..300).contains(&info.status) {
                st.non_2xx += 1;
            }
            if self.shared.keep_alive && info.keep_alive {
                st.keep_alive_requests += 1;
            }
            st.total_bytes += info.head_bytes + info.wire_body_bytes;
            st.html_bytes += info.body_bytes;
            if info.server.is_some() && st.server_software.is_none() {
                st.server_software = info.server;
                // Once is enough: capturing copies the header every time.
                c.parser.capture_server(false);
            }
            let baseline = match st.document_length {
                Some(len) => len,
                None => {
                    // ab holds every response to the run's first one, so the
                    // baseline is shared by all threads: set by the first
                    // response anywhere, learned once by every thread.
                    let len = match self.shared.doc_length.compare_exchange(
                        NO_LENGTH,
                        info.body_bytes,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => info.body_bytes,
                        Err(set) => set,
                    };
                    st.document_length = Some(len);
                    len
                }
            };
            let wrong_length = baseline != info.body_bytes;
            if wrong_length {
                st.variable_length = true;
                if !self.shared.variable_length {
                    st.failures.length += 1;
                }
            }
            // The latency every report figure gives: from the schedule in
            // open loop.
            let latency = if st.latency.open_loop() {
                behind.saturating_add(total)
            } else {
                total
            };
            let at = now.saturating_duration_since(self.shared.measure_start);
            st.series.record(
                at.as_secs().min(self.shared.last_second),
                Some(latency),
                wrong_length && !self.shared.variable_length,
            );
            self.finished += 1;
            self.progress.done.fetch_add(1, Ordering::Relaxed);
            // Only this thread writes it: a plain store, no read-modify-write.
            self.latency_sum_us = self.latency_sum_us.wrapping_add(total);
            self.progress
                .latency_us
                .store(self.latency_sum_us, Ordering::Relaxed);
        }
        if !keep {
            self.close_socket(i);
        }
        self.restart.push(i);
    }

    pub(super) fn fail(&mut self, i: usize, kind: Failure, msg: String) {
        let c = &mut self.conns[i];
        c.phase = Phase::Free;
        if c.counted {
            let st = &mut self.stats;
            st.complete += 1;
            match kind {
                Failure::Connect => st.failures.connect += 1,
                Failure::Receive => st.failures.receive += 1,
                Failure::Exception => st.failures.exceptions += 1,
                Failure::Timeout => {
                    st.failures.exceptions += 1;
                    st.timeouts += 1;
                }
            }
            let at = self
                .woke
                .saturating_duration_since(self.shared.measure_start);
            st.series
                .record(at.as_secs().min(self.shared.last_second), None, true);
            st.error(msg);
            self.finished += 1;
            self.progress.done.fetch_add(1, Ordering::Relaxed);
            self.progress.failed.store(st.failed(), Ordering::Relaxed);
        }
        self.close_socket(i);
        self.restart.push(i);
    }

    pub(super) fn check_timeouts(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            let busy = matches!(
                c.phase,
                Phase::Connecting
                    | Phase::Tunneling
                    | Phase::Handshaking
                    | Phase::Sending(_)
                    | Phase::Receiving
            );
            // ab's -s: how long the socket may sit without progress.
            if busy && now.saturating_duration_since(c.t_active) >= self.shared.timeout {
                self.fail(i, Failure::Timeout, "timeout".into());
            }
        }
    }

    pub(super) fn close_socket(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.tls = None;
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
    }

    pub(super) fn close(&mut self, i: usize) {
        self.close_socket(i);
        self.conns[i].phase = Phase::Free;
    }
}
