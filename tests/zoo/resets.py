"""Defect: connections are reset (RST) right after they are accepted,
before anything is read. Check resets (fail).

a  Load shedding by reset: the accept loop takes everything queued at
   once, and when more than PARAM connections arrived together, the
   ones beyond PARAM are closed abortively (SO_LINGER on, 0 s).
b  A connection limit that resets instead of queueing: any connection
   beyond PARAM open ones is closed abortively.
PARAM: 20..40 for both (default 24): above the 16 connections the
crossed-responses probe holds at once, below the burst of 100.

Which probes see resets: only the burst of 100 connects.
"""

import select
import socket
import struct
import threading
import time

import zoo_base


def abort(sock):
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class Counted(zoo_base.Conn):
    def closed(self):
        self.server.release_slot()


class Batched(zoo_base.Server):
    """Accepts all that is queued, then hands the batch to `admit`."""

    def accept_loop(self):
        self.listener.setblocking(False)
        while True:
            select.select([self.listener], [], [])
            batch = []
            while True:  # accept all that is queued
                try:
                    sock, _ = self.listener.accept()
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    time.sleep(0.1)
                    break
                sock.setblocking(True)
                if self.after_accept(sock):
                    batch.append(sock)
            for sock in self.admit(batch):
                self.dispatch(sock)

    def admit(self, batch):
        return batch


class Shedding(Batched):
    def admit(self, batch):
        for sock in batch[self.param :]:
            abort(sock)
        return batch[: self.param]


class Limited(Batched):
    conn_class = Counted

    def __init__(self, port, root, param):
        super().__init__(port, root, param)
        self.open = 0
        self.lock = threading.Lock()

    def after_accept(self, sock):
        with self.lock:
            if self.open >= self.param:
                abort(sock)
                return False
            self.open += 1
        return True

    def release_slot(self):
        with self.lock:
            self.open -= 1


if __name__ == "__main__":
    zoo_base.main({"a": Shedding, "b": Limited}, param={"a": (20, 40, 24), "b": (20, 40, 24)})
