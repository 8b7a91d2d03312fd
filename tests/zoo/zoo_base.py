"""The correct server every zoo server is built from.

Three pieces, kept apart so that a defect can be planted in exactly one:

- `Conn` is one HTTP/1.1 connection as a state machine with no socket
  code in it: bytes go in through `receive()`, bytes to send come out,
  and `closing` says when the connection is done. Message policy
  (parsing, routing, framing, keep-alive) lives in its small methods.
- `Server` is the IO: it listens, accepts, and drives one `Conn` per
  connection, either with a thread per connection (`model = "threads"`)
  or with one non-blocking selectors loop (`model = "selectors"`).
- `main()` is the command line every zoo server shares:

      python3 tests/zoo/NAME.py PORT ROOT VARIANT [PARAM]

  PORT is the port on 127.0.0.1, ROOT the directory served (GET /NAME
  serves ROOT/NAME, `/` serves ROOT/index.html), VARIANT `a` or `b`,
  PARAM one integer whose meaning and range each server documents. Bad
  arguments print one line to stderr and exit 2.

What the correct server promises (tests/zoo/README.md lists the defects
that break these promises one at a time):

- A head is read across any number of recv() calls until CRLFCRLF. A
  request line over 8 KiB gets 414, a head over 16 KiB gets 431, a
  malformed request line or header line gets 400; each of them closes
  the connection. Heads are decoded as latin-1, so obs-text is fine.
- GET and HEAD serve files with Content-Length, an IMF-fixdate Date and
  Content-Type; a missing file is 404, other methods 405. A path that
  would leave ROOT after percent-decoding is 404.
- HTTP/1.1 keeps the connection unless the request says `close`;
  HTTP/1.0 closes unless it says `keep-alive` (then the answer says it
  too). Pipelined requests are answered in order. `Expect:
  100-continue` gets `100 Continue` before the body is read.
- The connection is closed the lingering way (shutdown, read and drop
  for up to a second, close) so unread input never turns into a reset.
- Idle connections cost no CPU and are closed after a minute; a head or
  body that stalls that long gets 408.
"""

import errno
import mimetypes
import os
import re
import selectors
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate

# Every limit is named here and answered with its own status.
LINE_LIMIT = 8 * 1024  # request line longer than this: 414
HEAD_LIMIT = 16 * 1024  # head longer than this: 431
BODY_LIMIT = 1 << 20  # declared request body larger than this: 413
OUT_LIMIT = 1 << 20  # selectors model stops reading while this much is unsent
RECV_SIZE = 64 * 1024
BACKLOG = 128
IDLE_TIMEOUT = 60.0  # idle connection (no partial request) is closed
STALL_TIMEOUT = 60.0  # a head or body that stalls this long gets 408
SEND_TIMEOUT = 60.0  # a client that stops reading is dropped
LINGER_SECONDS = 1.0  # how long a closing connection's input is drained

TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
VERSION = re.compile(r"HTTP/(\d)\.(\d)")
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # HTAB and obs-text are fine

REASONS = {
    100: "Continue",
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    413: "Content Too Large",
    414: "URI Too Long",
    417: "Expectation Failed",
    431: "Request Header Fields Too Large",
    501: "Not Implemented",
    505: "HTTP Version Not Supported",
}


class BadRequest(Exception):
    """Malformed input; carries the status to answer with before closing."""

    def __init__(self, status):
        super().__init__(status)
        self.status = status


@dataclass
class Request:
    method: str
    target: str
    version: str  # "HTTP/1.0" or "HTTP/1.1"
    headers: list  # (lower-case name, value) in arrival order
    length: int = 0  # declared body length
    body: bytes = b""

    def header(self, name):
        values = [v for n, v in self.headers if n == name]
        return ", ".join(values) if values else None

    def tokens(self, name):
        """The comma-separated tokens of header `name`, lower-cased."""
        value = self.header(name) or ""
        return {t.strip().lower() for t in value.split(",") if t.strip()}


@dataclass
class Answer:
    status: int
    body: bytes = b""
    headers: list = field(default_factory=list)  # besides Date/Length/Connection
    keep: bool = True  # keep the connection open after this answer
    head_only: bool = False  # an answer to HEAD: no body is sent


@dataclass
class Pause:
    """An output part meaning "wait this long before sending the rest".
    Only the threads model honours it; no correct answer uses it."""

    seconds: float


IDLE, HEAD, BODY = "idle", "head", "body"


class Conn:
    """One connection's HTTP/1.1 state, without IO.

    `receive(data)` returns the parts to send (bytes, or `Pause`);
    `timeout()` says how long the IO layer may wait for more input and
    `expire()` what to send when that time is up. Once `closing` is set
    nothing more is read: the IO layer sends what it has and closes.
    """

    idle_timeout = IDLE_TIMEOUT
    head_timeout = STALL_TIMEOUT
    body_timeout = STALL_TIMEOUT

    def __init__(self, server):
        self.server = server
        self.param = server.param
        self.buf = bytearray()
        self.pending = None  # a Request whose body is still arriving
        self.closing = False
        self.answered = 0
        self.since = time.monotonic()  # when the current state began

    # -- state ---------------------------------------------------------

    def state(self):
        if self.pending is not None:
            return BODY
        return HEAD if self.buf else IDLE

    def timeout(self):
        """Seconds left before `expire()` is due, or None for no limit."""
        limit = {
            IDLE: self.idle_timeout,
            HEAD: self.head_timeout,
            BODY: self.body_timeout,
        }[self.state()]
        if limit is None:
            return None
        return max(0.0, self.since + limit - time.monotonic())

    def expire(self):
        """The input stalled past `timeout()`: close, with 408 if a
        request was under way."""
        if self.state() == IDLE:
            self.closing = True
            return []
        return self.fail(408)

    # -- input ---------------------------------------------------------

    def receive(self, data):
        before = self.state()
        self.buf += data
        out = []
        self.process(out)
        if self.state() != before:
            self.since = time.monotonic()
        return out

    def process(self, out):
        """Answers every complete request in the buffer, in order."""
        while not self.closing:
            req = self.next_request(out)
            if req is None:
                return
            self.answer(req, out)

    def next_request(self, out):
        """The next request with its body, or None while incomplete.
        Sends 100 Continue (via `out`) when a head asks for it."""
        if self.pending is None:
            req = self.take_head(out)
            if req is None:
                return None
            self.pending = req
            self.since = time.monotonic()
            if req.length > len(self.buf) and self.expects_continue(req):
                out.extend(self.interim(req))
        req = self.pending
        if len(self.buf) < req.length:
            return None
        req.body = bytes(self.buf[: req.length])
        del self.buf[: req.length]
        self.pending = None
        self.since = time.monotonic()
        return req

    def closed(self):
        """Called by the IO layer once the connection is gone."""

    def take_head(self, out):
        """The next complete head as a Request with its body length
        known, or None: incomplete (nothing is sent) or malformed (the
        error answer is in `out` and `closing` is set)."""
        while self.buf[:2] == b"\r\n":  # stray CRLF between requests
            del self.buf[:2]
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            status = self.partial_head_status()
            if status:
                out.extend(self.fail(status))
            return None
        if end + 4 > HEAD_LIMIT:
            out.extend(self.fail(431))
            return None
        try:
            req = self.parse_head(bytes(self.buf[:end]))
            if req is None:
                return None
            req.length = self.body_length(req)
        except BadRequest as e:
            out.extend(self.fail(e.status))
            return None
        del self.buf[: end + 4]
        return req

    def partial_head_status(self):
        """The status for an incomplete head that is already too long."""
        line_end = self.buf.find(b"\r\n")
        if line_end > LINE_LIMIT or (line_end < 0 and len(self.buf) > LINE_LIMIT):
            return 414
        if len(self.buf) > HEAD_LIMIT:
            return 431
        return None

    def parse_head(self, raw):
        """Parses a head (without its final CRLFCRLF) strictly. Returning
        None means "not complete yet"; malformed input raises BadRequest."""
        lines = raw.decode("latin-1").split("\r\n")
        return self.parse_lines(lines[0], lines[1:])

    def parse_lines(self, request_line, header_lines):
        if len(request_line) > LINE_LIMIT:
            raise BadRequest(414)
        method, target, version = self.split_request_line(request_line)
        if not TOKEN.fullmatch(method) or not target or CONTROL.search(target):
            raise BadRequest(400)
        m = VERSION.fullmatch(version)
        if not m:
            raise BadRequest(400)
        if m.group(1) != "1":
            raise BadRequest(505)
        version = "HTTP/1.0" if m.group(2) == "0" else "HTTP/1.1"
        headers = []
        for line in header_lines:
            header = self.parse_header_line(line)
            if header is not None:
                headers.append(header)
        return Request(method, target, version, headers)

    def split_request_line(self, line):
        parts = line.split(" ")
        if len(parts) != 3:
            raise BadRequest(400)
        return parts

    def parse_header_line(self, line):
        """(lower-case name, value), or BadRequest for a line without a
        colon, an empty or non-token name, or control characters."""
        name, colon, value = line.partition(":")
        if not colon or not TOKEN.fullmatch(name):
            raise BadRequest(400)
        value = value.strip(" \t")
        if CONTROL.search(value):
            raise BadRequest(400)
        return name.lower(), value

    def body_length(self, req):
        if req.header("transfer-encoding") is not None:
            raise BadRequest(501)  # chunked request bodies are not supported
        values = {v.strip() for n, v in req.headers if n == "content-length"}
        if not values:
            return 0
        if len(values) > 1 or not all(v.isdigit() for v in values):
            raise BadRequest(400)
        length = int(values.pop())
        if length > BODY_LIMIT:
            raise BadRequest(413)
        return length

    def expects_continue(self, req):
        return req.version == "HTTP/1.1" and "100-continue" in req.tokens("expect")

    def interim(self, req):
        """What to send once a head that expects 100-continue is read."""
        return [b"HTTP/1.1 100 Continue\r\n\r\n"]

    # -- answers -------------------------------------------------------

    def answer(self, req, out):
        ans = self.respond(req)
        ans.keep = ans.keep and self.persist(req)
        ans.head_only = req.method == "HEAD"
        out.extend(self.render(req, ans))
        self.answered += 1
        if not ans.keep:
            self.closing = True

    def fail(self, status):
        """The answer to malformed or stalled input; closes."""
        self.closing = True
        ans = Answer(status, REASONS[status].lower().encode() + b"\n", keep=False)
        ans.headers.append(("Content-Type", "text/plain"))
        return self.render(None, ans)

    def respond(self, req):
        """Routing: which Answer a complete request gets."""
        expect = req.tokens("expect") - {"100-continue"}
        if expect and req.version == "HTTP/1.1":
            return Answer(417, b"expectation failed\n", keep=False)
        if req.method not in ("GET", "HEAD"):
            return Answer(405, b"method not allowed\n", [("Allow", "GET, HEAD")])
        try:
            path = self.resolve(req.target)
        except BadRequest as e:
            return Answer(e.status, b"bad request\n", keep=False)
        if path is None:
            return self.not_found()
        try:
            body = self.read_file(path)
        except OSError:
            return self.not_found()
        kind = mimetypes.guess_type(os.fsdecode(path))[0] or "application/octet-stream"
        return Answer(200, body, [("Content-Type", kind)])

    def not_found(self):
        return Answer(404, b"not found\n", [("Content-Type", "text/plain")])

    def resolve(self, target):
        """The file a target names inside ROOT, or None. The query is
        ignored; any path that would leave ROOT after decoding is None."""
        path = target.split("?", 1)[0]
        m = re.match(r"https?://[^/]*", path, re.I)
        if m:  # absolute-form: keep the path
            path = path[m.end() :] or "/"
        if not path.startswith("/"):
            raise BadRequest(400)
        raw = percent_decode(path)
        rel = raw[1:]
        if b"\x00" in rel or b"\\" in rel or rel.startswith(b"/"):
            return None
        if b".." in rel.split(b"/"):
            return None
        root = self.server.root
        full = os.path.join(root, rel)
        if os.path.isdir(full):
            full = os.path.join(full, b"index.html")
        real = os.path.realpath(full)
        if os.path.commonpath([real, self.server.real_root]) != self.server.real_root:
            return None
        return full

    def read_file(self, path):
        with open(path, "rb") as f:
            return f.read()

    def persist(self, req):
        """Whether the connection stays open after answering `req`."""
        tokens = req.tokens("connection")
        if "close" in tokens:
            return False
        if req.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return True

    def render(self, req, ans):
        """The output parts of an answer. `req` is None for error answers
        to input that did not parse. May clear `ans.keep`."""
        head = self.head(req, ans, [("Content-Length", str(len(ans.body)))])
        return [head if ans.head_only else head + ans.body]

    def head(self, req, ans, framing):
        """The head of an answer; `framing` are the headers that say
        where its body ends."""
        lines = [self.status_line(req, ans)]
        date = self.date_value()
        if date:
            lines.append(f"Date: {date}")
        headers = ans.headers + framing + self.connection_headers(req, ans.keep)
        lines += [f"{name}: {value}" for name, value in headers]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def status_line(self, req, ans):
        return f"HTTP/1.1 {ans.status} {REASONS[ans.status]}"

    def date_value(self):
        return formatdate(usegmt=True)

    def connection_headers(self, req, keep):
        """`close` when closing; `keep-alive` when an HTTP/1.0 client
        asked for it and gets it."""
        if not keep:
            return [("Connection", "close")]
        if req is not None and req.version == "HTTP/1.0" and "keep-alive" in req.tokens("connection"):
            return [("Connection", "keep-alive")]
        return []


def percent_decode(path):
    """Decodes %XX escapes into bytes; a malformed escape is a 400."""
    raw = path.encode("latin-1")
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i] == 0x25:  # '%'
            pair = raw[i + 1 : i + 3]
            if len(pair) != 2 or not all(c in b"0123456789abcdefABCDEF" for c in pair):
                raise BadRequest(400)
            out.append(int(pair, 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return bytes(out)


class _Slot:
    """A connection inside the selectors loop."""

    def __init__(self, sock, conn):
        self.sock = sock
        self.conn = conn
        self.out = bytearray()
        self.linger_until = None  # set once the write side is shut
        self.events = 0


class Server:
    """Listens on 127.0.0.1:PORT and serves ROOT; `model` picks the IO."""

    model = "threads"  # or "selectors"
    backlog = BACKLOG
    conn_class = Conn

    def __init__(self, port, root, param):
        self.port = port
        self.root = os.fsencode(root)
        self.real_root = os.path.realpath(self.root)
        self.param = param
        self.listener = None

    def listen(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(self.backlog)
        return s

    def run(self):
        if self.listener is None:
            self.listener = self.listen()
        if self.model == "selectors":
            self.loop()
        else:
            self.accept_loop()

    # -- threads model -------------------------------------------------

    def accept_loop(self):
        while True:
            sock = self.accept()
            if sock is not None and self.after_accept(sock):
                self.dispatch(sock)

    def accept(self):
        """One accepted socket, or None after a transient error."""
        try:
            sock, _ = self.listener.accept()
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                time.sleep(0.1)  # out of descriptors: let some close
            return None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def after_accept(self, sock):
        """Called for each new connection; False means it was dropped."""
        return True

    def dispatch(self, sock):
        threading.Thread(target=self.serve, args=(sock,), daemon=True).start()

    def serve(self, sock, conn=None):
        """A connection thread's body. `pump` closes the socket on every
        normal path; an error closes it here."""
        conn = conn or self.conn_class(self)
        try:
            self.pump(sock, conn)
        except BaseException as e:
            sock.close()
            if not isinstance(e, OSError):
                raise
        finally:
            conn.closed()

    def pump(self, sock, conn, until=None):
        """Drives `conn` from `sock` until the connection ends (then the
        socket is closed) or `until()` turns true (then it is left open
        and False is returned)."""
        while not conn.closing:
            if until is not None and until():
                return False
            left = conn.timeout()
            if left is not None and left <= 0:
                self.send(sock, conn.expire())
                break
            sock.settimeout(left)
            try:
                data = self.recv(sock, conn)
            except TimeoutError:
                self.send(sock, conn.expire())
                break
            if not data:  # the client is gone: nothing left to drain
                sock.close()
                return True
            self.send(sock, conn.receive(data))
        self.finish(sock, conn)
        return True

    def recv(self, sock, conn):
        return sock.recv(RECV_SIZE)

    def send(self, sock, parts):
        sock.settimeout(SEND_TIMEOUT)
        run = bytearray()
        for part in parts:
            if isinstance(part, Pause):
                if run:
                    sock.sendall(run)
                    run.clear()
                time.sleep(part.seconds)
            else:
                run += part
        if run:
            sock.sendall(run)

    def finish(self, sock, conn):
        """Closes after the last answer without resetting: shut the write
        side, drain the input for LINGER_SECONDS or until EOF, close."""
        try:
            sock.shutdown(socket.SHUT_WR)
            until = time.monotonic() + LINGER_SECONDS
            while True:
                left = until - time.monotonic()
                if left <= 0:
                    break
                sock.settimeout(left)
                if not sock.recv(RECV_SIZE):
                    break
        except OSError:
            pass
        sock.close()

    # -- selectors model -----------------------------------------------

    def loop(self):
        self.sel = selectors.DefaultSelector()
        self.slots = set()
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        while True:
            for key, mask in self.sel.select(self.next_timeout()):
                if key.data is None:
                    self.accept_ready()
                    continue
                slot = key.data
                if mask & selectors.EVENT_WRITE and slot in self.slots:
                    self.flush(slot)
                if mask & selectors.EVENT_READ and slot in self.slots:
                    self.on_readable(slot)
            self.expire_slots()

    def next_timeout(self):
        now = time.monotonic()
        best = None
        for slot in self.slots:
            if slot.linger_until is not None:
                left = slot.linger_until - now
            elif slot.out or slot.conn.closing:
                continue
            else:
                left = slot.conn.timeout()
            if left is not None and (best is None or left < best):
                best = max(0.0, left)
        return best

    def accept_ready(self):
        while True:  # accept until the queue is empty
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    return
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            slot = _Slot(sock, self.conn_class(self))
            self.slots.add(slot)
            self.watch(slot, selectors.EVENT_READ)

    def watch(self, slot, events):
        if events == slot.events:
            return
        if slot.events == 0:
            self.sel.register(slot.sock, events, slot)
        else:
            self.sel.modify(slot.sock, events, slot)
        slot.events = events

    def drop(self, slot):
        if slot in self.slots:
            self.slots.discard(slot)
            if slot.events:
                self.sel.unregister(slot.sock)
            slot.sock.close()
            slot.conn.closed()

    def on_readable(self, slot):
        try:
            data = slot.sock.recv(RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.drop(slot)
            return
        if slot.linger_until is not None:
            if not data:
                self.drop(slot)
            return  # draining: input is dropped
        if not data:
            self.drop(slot)
            return
        self.queue(slot, slot.conn.receive(data))

    def queue(self, slot, parts):
        for part in parts:
            if isinstance(part, Pause):
                raise NotImplementedError("Pause needs the threads model")
            slot.out += part
        self.flush(slot)

    def flush(self, slot):
        """Sends what can be sent now, then sets what to wait for."""
        try:
            while slot.out:
                n = slot.sock.send(slot.out)
                del slot.out[:n]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.drop(slot)
            return
        if slot.out:
            # Backpressure: stop reading while the client is not reading.
            reading = len(slot.out) < OUT_LIMIT and not slot.conn.closing
            self.watch(slot, selectors.EVENT_WRITE | (selectors.EVENT_READ if reading else 0))
        elif slot.conn.closing and slot.linger_until is None:
            try:
                slot.sock.shutdown(socket.SHUT_WR)
            except OSError:
                self.drop(slot)
                return
            slot.linger_until = time.monotonic() + LINGER_SECONDS
            self.watch(slot, selectors.EVENT_READ)
        else:
            self.watch(slot, selectors.EVENT_READ)

    def expire_slots(self):
        now = time.monotonic()
        for slot in list(self.slots):
            if slot.linger_until is not None:
                if now >= slot.linger_until:
                    self.drop(slot)
            elif not slot.out and not slot.conn.closing:
                left = slot.conn.timeout()
                if left is not None and left <= 0:
                    self.queue(slot, slot.conn.expire())


def die(message, code=2):
    print(message, file=sys.stderr)
    sys.exit(code)


def main(variants, param=None, argv=None):
    """Runs the server class `variants[VARIANT]`. `param` is (low, high,
    default) for a PARAM range, a dict of such ranges by variant, or None
    when PARAM is unused (then any integer is accepted)."""
    argv = sys.argv if argv is None else argv
    name = os.path.basename(argv[0])
    usage = f"usage: {name} PORT ROOT VARIANT[{'|'.join(sorted(variants))}] [PARAM]"
    args = argv[1:]
    if not 3 <= len(args) <= 4:
        die(usage)
    port, root, variant = args[:3]
    if not port.isdigit() or not 0 < int(port) < 65536:
        die(f"{name}: PORT must be 1..65535, not {port!r}")
    if not os.path.isdir(root):
        die(f"{name}: ROOT {root!r} is not a directory")
    if variant not in variants:
        die(f"{name}: unknown VARIANT {variant!r}; {usage}")
    if isinstance(param, dict):
        param = param.get(variant)
    if len(args) == 4:
        try:
            value = int(args[3])
        except ValueError:
            die(f"{name}: PARAM must be an integer, not {args[3]!r}")
    else:
        value = param[2] if param else 0
    if param and not param[0] <= value <= param[1]:
        die(f"{name}: PARAM must be {param[0]}..{param[1]}, not {value}")
    server = variants[variant](int(port), root, value)
    try:
        server.listener = server.listen()
    except OSError as e:
        die(f"{name}: cannot listen on 127.0.0.1:{port}: {e.strerror or e}", 1)
    try:
        server.run()
    except KeyboardInterrupt:
        sys.exit(130)
