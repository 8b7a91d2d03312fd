"""Defect: closing a connection resets it. Check
reset-on-close (fail).

Both variants answer a request that carries a body (without
`Expect: 100-continue`) as soon as its head is read, without reading the
body, and close: as a server that refuses uploads does.
a  Requests are read 1024 bytes at a time, and that close is a plain
   close() at once, without draining: the unread body makes the kernel
   answer with a TCP RST, which can destroy the answer in flight.
b  Every close after an answer is abortive (SO_LINGER on, 0 s): a RST
   instead of a FIN, whatever was sent.
PARAM: unused; any integer is accepted.

Other probes: with (b) every probe whose answer closes the connection
(HTTP/1.0, `Connection: close`, bad input, the ~1000 closes of the fd
count) ends in a RST after the answer; clients that read the
Content-Length-framed answer and stop are not affected.
"""

import socket
import struct

import zoo_base


class EarlyAnswer(zoo_base.Conn):
    """Answers a request with a body on its head alone, then closes."""

    def take_head(self, out):
        req = super().take_head(out)
        if req is not None and req.length and not self.expects_continue(req):
            req.length = 0  # the body is left unread
            req.unread = True
        return req

    def persist(self, req):
        return not getattr(req, "unread", False) and super().persist(req)


class CloseAtOnce(zoo_base.Server):
    conn_class = EarlyAnswer

    def recv(self, sock, conn):
        return sock.recv(1024)

    def finish(self, sock, conn):
        sock.close()


class Abortive(zoo_base.Server):
    conn_class = EarlyAnswer

    def finish(self, sock, conn):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()


if __name__ == "__main__":
    zoo_base.main({"a": CloseAtOnce, "b": Abortive})
