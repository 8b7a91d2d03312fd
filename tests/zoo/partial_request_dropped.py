"""Defect: a head that does not arrive in one recv() is not waited for.
Check partial-request-dropped (fail).

Both variants treat what one recv() returned as whole requests: after
answering the complete ones, an incomplete head left over is given up.
a  ... with `400 Bad Request` and a close.
b  ... by closing silently (the lingering way, no RST).
Request bodies (Expect) are still waited for; whole heads, pipelined in
one write, are fine.
PARAM: unused; any integer is accepted.

Other probes: the 16 concurrent connections send their heads in pieces
too, so their answers differ from the same request sent whole
(crossed-responses); slowloris client A is dropped at its first byte,
which does not hurt client B.
"""

import zoo_base


class OneRead(zoo_base.Conn):
    give_up_status = 400

    def receive(self, data):
        out = super().receive(data)
        if not self.closing and self.state() == zoo_base.HEAD:
            if self.give_up_status:
                out.extend(self.fail(self.give_up_status))
            else:
                self.closing = True
        return out


class OneReadSilent(OneRead):
    give_up_status = None


class A(zoo_base.Server):
    conn_class = OneRead


class B(zoo_base.Server):
    conn_class = OneReadSilent


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B})
