//! The defects check knows, once: each one's stable id, its family, how
//! much it weighs (fail or warn), the rule it breaks, what common clients
//! do with it, and the fix in one sentence.

use serde::Serialize;

/// Where a defect shows, in the order check runs the families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    Framing,
    Connections,
    Requests,
    Robustness,
    Concurrency,
    Safety,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Framing => "framing",
            Family::Connections => "connections",
            Family::Requests => "requests",
            Family::Robustness => "robustness",
            Family::Concurrency => "concurrency",
            Family::Safety => "safety",
        }
    }

    /// The families a sweep or stress run checks before measuring: the
    /// quick ones, whose defects change how answers are counted.
    pub fn quick(self) -> bool {
        matches!(self, Family::Framing | Family::Connections)
    }
}

/// What a defect found costs the target: `Fail` makes check exit 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    Fail,
    Warn,
}

/// One defect check can find.
#[derive(Debug)]
pub struct Defect {
    pub id: &'static str,
    pub family: Family,
    pub weight: Weight,
    /// The RFC section (or practice) the defect breaks.
    pub rule: &'static str,
    /// What ab, curl and browsers do when they meet it.
    pub clients: &'static str,
    pub fix: &'static str,
}

const fn fail(
    id: &'static str,
    family: Family,
    rule: &'static str,
    clients: &'static str,
    fix: &'static str,
) -> Defect {
    Defect {
        id,
        family,
        weight: Weight::Fail,
        rule,
        clients,
        fix,
    }
}

const fn warn(
    id: &'static str,
    family: Family,
    rule: &'static str,
    clients: &'static str,
    fix: &'static str,
) -> Defect {
    Defect {
        weight: Weight::Warn,
        ..fail(id, family, rule, clients, fix)
    }
}

use Family::*;

/// Every defect, in the order check reports them.
pub const DEFECTS: &[Defect] = &[
    fail(
        "bytes-after-body",
        Framing,
        "RFC 9112 section 6.3: the body ends where Content-Length says; what follows is the next response",
        "ab ignores them; curl warns 'Excess found'; a keep-alive client reads them as a broken next response",
        "send exactly Content-Length bytes of body and nothing after it",
    ),
    fail(
        "body-shorter-than-length",
        Framing,
        "RFC 9112 section 6.3 and 8: a close before Content-Length bytes arrived means an incomplete message",
        "curl fails with 'transfer closed with outstanding read data'; browsers show a truncated page; ab counts a failure",
        "set Content-Length from the bytes you actually send, and send all of them before closing",
    ),
    fail(
        "no-length-no-close",
        Framing,
        "RFC 9112 section 6.3 step 8: a body without Content-Length or chunked ends only at the close",
        "every client waits for the close: ab, curl and browsers hang until their timeout",
        "send Content-Length (or chunked), or close the connection after the body",
    ),
    fail(
        "bad-chunked",
        Framing,
        "RFC 9112 section 7.1: chunk sizes are hex, each chunk ends in CRLF, the body ends with a 0-size chunk",
        "curl fails with 'invalid chunk'; browsers show a partial page or an error",
        "write each chunk as hex size, CRLF, data, CRLF, and end with 0 CRLF CRLF",
    ),
    fail(
        "head-with-body",
        Framing,
        "RFC 9110 section 9.3.2: a response to HEAD has no body",
        "the bytes are read as the next response on a kept-alive connection, which then breaks",
        "answer HEAD with the GET head (Content-Length included) and no body",
    ),
    fail(
        "bad-status-line",
        Framing,
        "RFC 9112 section 4: status-line = HTTP-version SP 3DIGIT SP [reason-phrase]",
        "ab and curl reject the response; browsers may show the bytes as text or fail",
        "start every response with 'HTTP/1.1 200 OK' (version, code, reason)",
    ),
    warn(
        "bad-date",
        Framing,
        "RFC 9110 section 6.6.1: an origin server with a clock sends Date, as an IMF-fixdate",
        "caches and conditional requests misjudge freshness; most clients carry on",
        "send Date: in the form 'Sun, 06 Nov 1994 08:49:37 GMT' (e.g. Python's email.utils.formatdate(usegmt=True))",
    ),
    warn(
        "keepalive-ignored",
        Connections,
        "RFC 9112 section 9.3: an HTTP/1.1 connection persists unless 'Connection: close' is sent",
        "clients reconnect for every request, paying a handshake each time; ab -k counts the lost keep-alives",
        "keep the connection open after an HTTP/1.1 answer, or send 'Connection: close' when you close it",
    ),
    fail(
        "pipelining-broken",
        Connections,
        "RFC 9112 section 9.3.2: a server answers pipelined requests, in the order received",
        "wrk and curl's pipelining lose or misattribute answers; proxies that pipeline break",
        "keep the bytes after one request in the buffer and parse the next request from them",
    ),
    fail(
        "http10-not-closed",
        Connections,
        "RFC 9112 section 9.3: an HTTP/1.0 request without keep-alive ends with the server closing",
        "ab without -k waits for the close after each answer, so every request takes the client's timeout",
        "close the connection after answering an HTTP/1.0 request that did not ask for keep-alive",
    ),
    fail(
        "http10-keepalive-unconfirmed",
        Connections,
        "RFC 9112 appendix C.2.2: an HTTP/1.0 keep-alive is kept only when the answer says 'Connection: keep-alive'",
        "ab -k waits for a close that never comes: the run stalls until its timeout",
        "answer an HTTP/1.0 keep-alive request with 'Connection: keep-alive', or close after it",
    ),
    fail(
        "reset-on-close",
        Connections,
        "RFC 9112 section 9.6: close with unread input sends a RST that can destroy the answer before it is read",
        "clients on real networks see 'connection reset' instead of the answer",
        "after the last answer, shutdown(SHUT_WR), read and discard until EOF or a short timeout, then close",
    ),
    warn(
        "expect-continue-ignored",
        Connections,
        "RFC 9110 section 10.1.1: a server that will read the body sends 100 Continue (or a final answer) first",
        "curl waits 1 s before sending the body anyway; other clients may wait longer",
        "answer 'Expect: 100-continue' with 'HTTP/1.1 100 Continue' before reading the body",
    ),
    fail(
        "partial-request-dropped",
        Requests,
        "RFC 9112 section 2.2: TCP is a byte stream; a request may arrive in any number of reads",
        "slow or distant clients, and any client whose head spans two segments, get no answer",
        "read until the blank line (CRLF CRLF) ends the head, however many reads that takes",
    ),
    fail(
        "crash-on-bad-input",
        Robustness,
        "RFC 9112 section 2.2 and 3: a malformed request gets 400; a server stays up",
        "one bad client (a scanner, a fuzzer, a typo) takes the service down for everyone",
        "catch errors per connection, answer 400 and close, and read request bytes as latin-1, not UTF-8",
    ),
    fail(
        "bad-input-hangs",
        Robustness,
        "RFC 9112 section 2.2: a request that cannot be parsed is answered 400 and the connection closed",
        "the client hangs until its own timeout, and the server keeps the connection's resources",
        "on a parse error, answer 400 and close the connection, also when a handler fails",
    ),
    warn(
        "bad-input-accepted",
        Robustness,
        "RFC 9112 sections 3 and 5: a request with a malformed line is answered 400",
        "requests smuggled past a proxy that reads the line differently",
        "reject request lines without exactly three parts and header lines without a colon with 400",
    ),
    fail(
        "one-at-a-time",
        Concurrency,
        "practice: one idle client must not keep others from being served",
        "browsers hold idle keep-alive connections open, so the second visitor waits",
        "serve connections concurrently (threads, a pool or an event loop), or close idle ones when others wait",
    ),
    fail(
        "crossed-responses",
        Concurrency,
        "RFC 9112 section 9.3: each connection gets the answers to its own requests",
        "clients receive another client's data: wrong pages, leaked content",
        "keep each connection's receive buffer and request state in the connection, never in globals",
    ),
    fail(
        "listen-overflow",
        Concurrency,
        "practice: the listen backlog must absorb a burst of connects (Linux drops SYNs when it is full)",
        "clients retry the SYN after 1 s, 3 s and 7 s: tiny requests take seconds",
        "call listen() with a large backlog (e.g. 1024 or SOMAXCONN) and accept promptly",
    ),
    fail(
        "resets",
        Concurrency,
        "practice: a server under a burst accepts and answers, it does not refuse or reset",
        "clients see 'connection refused' or 'connection reset' and fail the request",
        "accept every connection and close only after answering, with a lingering close",
    ),
    fail(
        "busy-when-idle",
        Concurrency,
        "practice: a server with no clients uses no CPU",
        "benchmarks of other servers on the machine are slowed, and so is the server itself",
        "block in accept/recv/poll instead of looping, and end a handler's loop when its client closes",
    ),
    fail(
        "fd-leak",
        Concurrency,
        "practice: every connection and file opened for a request is closed after it",
        "the server fails with 'too many open files' after some thousands of requests",
        "close each accepted socket and opened file when its request or connection ends (use with/try-finally)",
    ),
    fail(
        "path-traversal",
        Safety,
        "RFC 3986 section 5.2.4 and RFC 9110 section 17.1: dot segments must not reach outside what is served",
        "anyone can read any file the server's user can read, /etc/passwd to private keys",
        "decode the path, resolve it, and refuse any result outside the served directory",
    ),
    fail(
        "slowloris-blocks",
        Safety,
        "practice: one slow client must not keep others from being served",
        "a single attacker sending a byte a second takes the server down for everyone",
        "read heads without blocking the other connections, and drop heads that take too long",
    ),
];

/// The defect with this id.
pub fn defect(id: &str) -> Option<&'static Defect> {
    DEFECTS.iter().find(|d| d.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_families_in_order() {
        let mut seen = std::collections::HashSet::new();
        let mut last = 0;
        for d in DEFECTS {
            assert!(seen.insert(d.id), "{} twice", d.id);
            let rank = d.family as usize;
            assert!(rank >= last, "{} out of family order", d.id);
            last = rank;
            assert!(!d.rule.is_empty() && !d.clients.is_empty() && !d.fix.is_empty());
        }
        assert_eq!(DEFECTS.len(), 25);
    }
}
