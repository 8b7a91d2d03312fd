"""Defect: a bad request gets neither an answer nor a close; that
connection hangs (other connections keep working). Check
bad-input-hangs (fail).

a  Threads; each head is decoded as UTF-8. On a decode error (a header
   value such as `\\xff\\xfe\\xc3\\x28`) the connection's thread dies with
   the exception (traceback on stderr) while the socket stays
   referenced in the server's list of open connections, so it is
   never answered nor closed.
b  A head with a header line without a colon is taken for an
   incomplete one: the server waits for more input and answers nothing
   (until the 60 s stall limit sends 408).
PARAM: unused; any integer is accepted.
"""

import threading

import zoo_base

OPEN = []  # every accepted socket, for as long as its thread lives
OPEN_LOCK = threading.Lock()


class StrictUtf8(zoo_base.Conn):
    def parse_head(self, raw):
        raw.decode("utf-8")  # UnicodeDecodeError kills the thread
        return super().parse_head(raw)


class WaitsOnNoColon(zoo_base.Conn):
    def parse_head(self, raw):
        lines = raw.decode("latin-1").split("\r\n")
        if any(":" not in line for line in lines[1:]):
            return None  # "the rest has not arrived yet"
        return super().parse_head(raw)


class A(zoo_base.Server):
    conn_class = StrictUtf8

    def serve(self, sock):
        with OPEN_LOCK:
            OPEN.append(sock)
        self.pump(sock, self.conn_class(self))  # no cleanup on exceptions
        with OPEN_LOCK:
            OPEN.remove(sock)


class B(zoo_base.Server):
    conn_class = WaitsOnNoColon


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B})
