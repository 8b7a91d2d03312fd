"""Defect: a 200 answer with a body but neither Content-Length nor
chunked encoding, on a connection that stays open, so the client cannot
tell where the body ends. Check no-length-no-close (fail).

a  HTTP/1.1 200 with the body and no framing header; the connection is
   kept, as for any HTTP/1.1 answer.
b  A streaming writer: the head (with `Connection: keep-alive`, no
   framing header) is sent first, PARAM ms later the body; the
   connection is kept.
Only 200 answers to GET on kept connections are affected: HEAD, 404,
405 and answers that close the connection (where the close ends the
body legally) are correct.
PARAM: 0..100, ms between head and body in (b) (default 20). Unused by
(a), which accepts any integer.

Other probes: every probe that reads a 200 answer and then expects more
on the connection (pipelining, the 16 concurrent connections) waits for
a close that does not come.
"""

import zoo_base


class Unframed(zoo_base.Conn):
    def affected(self, req, ans):
        return ans.status == 200 and not ans.head_only and ans.keep

    def render(self, req, ans):
        if not self.affected(req, ans):
            return super().render(req, ans)
        return [self.head(req, ans, []) + ans.body]


class Streamed(Unframed):
    def render(self, req, ans):
        if not self.affected(req, ans):
            return super().render(req, ans)
        head = self.head(req, ans, [("Connection", "keep-alive")])
        return [head, zoo_base.Pause(self.param / 1000), ans.body]


class A(zoo_base.Server):
    conn_class = Unframed


class B(zoo_base.Server):
    conn_class = Streamed


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B}, param={"a": None, "b": (0, 100, 20)})
