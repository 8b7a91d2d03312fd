"""Defect: `Expect: 100-continue` gets no `100 Continue`. Check
expect-continue-ignored (warn).

a  The server never sends 100 and just waits for the body; once the
   client gives up waiting (RFC 9110 lets it) and sends the body, the
   request is answered normally (405 for POST).
b  The server waits PARAM ms for the body without sending 100; a body
   that comes in time is answered normally, otherwise the answer is 417
   and the connection is closed. Either way no 100 is sent.
PARAM: 2000..4000, ms (b) waits for the body (default 3000). Unused by
(a), which accepts any integer.
"""

import zoo_base


class Silent(zoo_base.Conn):
    def interim(self, req):
        return []


class Impatient(Silent):
    @property
    def body_timeout(self):
        return self.param / 1000

    def expire(self):
        if self.state() == zoo_base.BODY:
            return self.fail(417)
        return super().expire()


class A(zoo_base.Server):
    conn_class = Silent


class B(zoo_base.Server):
    conn_class = Impatient


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B}, param={"a": None, "b": (2000, 4000, 3000)})
