"""Defect: one client sending its head slowly keeps every other client
waiting. Check slowloris-blocks (fail).

a  One selectors loop, but once a connection's first byte of a head
   has arrived, the loop switches that socket to blocking reads until
   the head is complete (or the 60 s stall limit); nothing else is
   served meanwhile.
b  A thread per connection, but a global lock is taken when the first
   byte of a head arrives and released when the head is complete (or
   the connection ends), so heads are read one at a time.
Heads that arrive whole or quickly split (50 ms pieces, 16 connections
interleaving their pieces) are fine: the waits are short. Idle
connections hold nothing.
PARAM: unused; any integer is accepted.
"""

import selectors
import threading

import zoo_base


class BlockingHeads(zoo_base.Server):
    model = "selectors"

    def on_readable(self, slot):
        super().on_readable(slot)
        if slot not in self.slots or slot.linger_until is not None:
            return
        conn, sock = slot.conn, slot.sock
        if conn.closing or conn.state() != zoo_base.HEAD:
            return
        sock.setblocking(True)
        try:
            while conn.state() == zoo_base.HEAD and not conn.closing:
                sock.settimeout(max(0.001, conn.timeout()))
                try:
                    data = sock.recv(zoo_base.RECV_SIZE)
                except TimeoutError:
                    self.queue(slot, conn.expire())
                    break
                if not data:
                    self.drop(slot)
                    return
                self.queue(slot, conn.receive(data))
        except OSError:
            self.drop(slot)
            return
        if slot in self.slots:
            sock.setblocking(False)


HEADS = threading.Lock()  # held while one connection's head is arriving


class OneHeadAtATime(zoo_base.Conn):
    holds = False

    def receive(self, data):
        if not self.holds and self.state() == zoo_base.IDLE:
            HEADS.acquire()
            self.holds = True
        try:
            return super().receive(data)
        finally:
            if self.holds and self.state() != zoo_base.HEAD:
                self.closed()

    def closed(self):
        if self.holds:
            self.holds = False
            HEADS.release()


class B(zoo_base.Server):
    conn_class = OneHeadAtATime


if __name__ == "__main__":
    zoo_base.main({"a": BlockingHeads, "b": B})
