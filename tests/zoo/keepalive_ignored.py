"""Defect: keep-alive is not honoured, though the answers never say
`Connection: close`. Check keepalive-ignored (warn).

a  After answering everything that has arrived, the server closes the
   connection (the lingering way), as if every client were done after
   its last request. Pipelined requests sent in one write are all
   answered first; a split head is waited for.
b  A kept connection that has been answered and is idle is closed after
   PARAM ms. Fresh connections and stalled requests get the normal
   timeouts.
PARAM: 100..600, the idle limit of (b) in ms (default 300). Unused by
(a), which accepts any integer.

Other probes: the framing probe's 1 s watch after a keep-alive answer
sees the close (that is this check, not framing); an idle connection
held by client A is closed, which does not keep client B from being
answered.
"""

import zoo_base


class HangsUpWhenDone(zoo_base.Conn):
    def receive(self, data):
        answered = self.answered
        out = super().receive(data)
        if self.answered > answered and self.state() == zoo_base.IDLE:
            self.closing = True
        return out


class ShortIdle(zoo_base.Conn):
    @property
    def idle_timeout(self):
        return self.param / 1000 if self.answered else zoo_base.IDLE_TIMEOUT


class A(zoo_base.Server):
    conn_class = HangsUpWhenDone


class B(zoo_base.Server):
    conn_class = ShortIdle


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B}, param={"a": None, "b": (100, 600, 300)})
