"""Defect: connections share state, so under concurrency a client gets
an answer meant for another request. Check crossed-responses (fail).

a  All connection threads recv_into() one module-level buffer and set
   one module-level fill count, work for PARAM ms, then take the
   buffer's contents as what they received. When several connections
   receive within that time, all of them take the last one's bytes:
   with heads sent in pieces, connections answer another connection's
   request (or a 400 for a head mixed from several).
b  A head that completes sets one global "current path"; the thread
   then works for PARAM ms and builds its answer from the global, which
   a concurrent request may have replaced.
One connection at a time (and identical concurrent requests) is served
correctly.
PARAM: the ms of work per read (a) or per request (b): (a) 1..5
(default 2), (b) 1..20 (default 5). Sequential probes pay it on every
request (1000 requests: about 1000 x PARAM ms).

Other probes: identical concurrent requests (a burst of the same GET)
are not visibly affected. In (a), during slowloris, a byte of client A
that arrives within PARAM ms of a read of client B's request replaces
it (that request of B is lost or answered 400); A's bytes come 1 s
apart, so B is hit only when its send falls within PARAM (<= 5) ms of
one of A's, and B's next request is unaffected.
"""

import time

import zoo_base

SHARED = bytearray(zoo_base.RECV_SIZE)  # one receive buffer for everyone
shared_len = 0  # how much of SHARED was filled, by whichever thread


class SharedBuffer(zoo_base.Server):
    def recv(self, sock, conn):
        global shared_len
        n = sock.recv_into(SHARED)
        if n == 0:
            return b""  # the client closed
        shared_len = n
        time.sleep(self.param / 1000)  # "work" on the buffer
        return bytes(SHARED[:shared_len])


current_target = None  # the path of the request being answered, for everyone


class SharedPath(zoo_base.Conn):
    def respond(self, req):
        global current_target
        current_target = req.target
        time.sleep(self.param / 1000)  # "work"
        req.target = current_target
        return super().respond(req)


class B(zoo_base.Server):
    conn_class = SharedPath


if __name__ == "__main__":
    zoo_base.main({"a": SharedBuffer, "b": B}, param={"a": (1, 5, 2), "b": (1, 20, 5)})
