"""Defect: one connection is served at a time, so an idle keep-alive
connection keeps every other client waiting. Check
one-at-a-time (fail).

a  One thread, blocking sockets: the accept loop serves a connection
   until its client closes it; idle keep-alive connections have no time
   limit. A head that has been incomplete for 2 s is answered 408 and
   closed.
b  A thread per connection, but one global lock: a connection takes it
   before its first answer and keeps it until it is closed, so a second
   client's head is read but not answered. Heads have the same 2 s
   limit.
How neither trips slowloris-blocks: in (a) the slow client's head
stalls past 2 s and is dropped, after which the waiting client is
served (within about 2 s); in (b) a client that never completes a head
never holds the lock. The slowloris client B must use one connection,
or close each connection after its answer (`Connection: close` or just
closing it).
PARAM: unused; any integer is accepted.

Other probes: clients that hold several connections open at once (the
16 concurrent connections, a burst that keeps its connections until
all are answered) get their answers one connection at a time, or not
at all while the first stays open.
"""

import threading

import zoo_base


class Patient(zoo_base.Conn):
    idle_timeout = None
    head_timeout = 2.0


class Single(zoo_base.Server):
    conn_class = Patient

    def dispatch(self, sock):
        self.serve(sock)  # in the accept loop's own thread


SERVING = threading.Lock()


class Exclusive(zoo_base.Conn):
    head_timeout = 2.0
    holds = False

    def answer(self, req, out):
        if not self.holds:
            SERVING.acquire()
            self.holds = True
        super().answer(req, out)

    def closed(self):
        if self.holds:
            self.holds = False
            SERVING.release()


class Locked(zoo_base.Server):
    conn_class = Exclusive


if __name__ == "__main__":
    zoo_base.main({"a": Single, "b": Locked})
