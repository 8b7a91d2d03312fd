"""Defect: the server burns CPU while nothing happens. Check
busy-when-idle (fail).

a  A connection thread takes recv() returning b"" for "no data yet"
   instead of "the client closed": after a client closes, its thread
   calls recv() again and again, forever. Only the first such thread
   spins (the others end normally), so at most one core is burnt; it
   starts with the first client that closes a connection.
b  The accept loop polls a non-blocking listening socket without ever
   sleeping, from the start.
Requests are answered correctly, a little slower: the spinning thread
competes for Python's GIL.
PARAM: unused; any integer is accepted.
"""

import threading

import zoo_base

SPINNER = threading.Lock()  # held by the one thread that spins


class EofIsNoData(zoo_base.Server):
    def recv(self, sock, conn):
        data = sock.recv(zoo_base.RECV_SIZE)
        if data or not SPINNER.acquire(blocking=False):
            return data
        while not data:  # "nothing yet, try again"
            data = sock.recv(zoo_base.RECV_SIZE)
        return data


class PollingAccept(zoo_base.Server):
    def accept_loop(self):
        self.listener.setblocking(False)
        while True:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                continue
            sock.setblocking(True)
            self.dispatch(sock)


if __name__ == "__main__":
    zoo_base.main({"a": EofIsNoData, "b": PollingAccept})
