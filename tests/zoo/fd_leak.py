"""Defect: every request leaks a file descriptor. Check
fd-leak (fail).

a  After a `Connection: close` answer the socket is shut down for
   writing (the client sees EOF and no reset) and drained, but never
   closed: it stays in a list. Connections the client closes first are
   closed normally.
b  The served file is opened for each request and never closed (the
   file objects are kept in a list).
On start the soft RLIMIT_NOFILE is raised to the hard limit, so ~1000
requests do not exhaust a 1024 limit.
PARAM: unused; any integer is accepted.
"""

import resource
import socket
import time

import zoo_base

KEPT = []  # leaked sockets or files


class NeverClosed(zoo_base.Server):
    def finish(self, sock, conn):
        try:
            sock.shutdown(socket.SHUT_WR)
            until = time.monotonic() + zoo_base.LINGER_SECONDS
            while time.monotonic() < until:
                sock.settimeout(max(0.001, until - time.monotonic()))
                if not sock.recv(zoo_base.RECV_SIZE):
                    break
        except OSError:
            pass
        KEPT.append(sock)


class OpenFiles(zoo_base.Conn):
    def read_file(self, path):
        f = open(path, "rb")
        KEPT.append(f)
        return f.read()


class B(zoo_base.Server):
    conn_class = OpenFiles


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 16
    if soft != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


if __name__ == "__main__":
    raise_fd_limit()
    zoo_base.main({"a": NeverClosed, "b": B})
