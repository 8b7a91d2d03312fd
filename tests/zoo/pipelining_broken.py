"""Defect: pipelined requests are lost. Check pipelining-broken
(fail).

a  After answering a request, whatever else the same reads brought in
   is thrown away (one recv per request): of two requests sent in one
   write, the second is never answered.
b  Of the complete requests in the buffer, only the last is answered
   (a request that closes the connection ends the batch): of two
   requests sent in one write, only the second is answered.
A single request per write, split heads, and Expect bodies work; the
connection is kept.
PARAM: unused; any integer is accepted.
"""

import zoo_base


class DropsTheRest(zoo_base.Conn):
    def answer(self, req, out):
        super().answer(req, out)
        self.buf.clear()


class LastOnly(zoo_base.Conn):
    def process(self, out):
        last = None
        while not self.closing:
            req = self.next_request(out)
            if req is None:
                break
            last = req
            if not self.persist(req):
                break
        if last is not None and not self.closing:
            self.answer(last, out)


class A(zoo_base.Server):
    conn_class = DropsTheRest


class B(zoo_base.Server):
    conn_class = LastOnly


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B})
