"""Defect: an answer to HEAD carries a body. Check head-with-body
(fail).

a  HEAD is answered like GET, body included (the body is written
   without looking at the method). Content-Length is the body's length.
b  HEAD has its own handler that answers `Content-Length: 0` and then
   writes PARAM bytes of status text anyway.
The connection is kept either way; GET answers are correct.
PARAM: 1..64, bytes of text written by (b) (default 12). Unused by (a),
which accepts any integer.

Other probes: none send HEAD, so only the framing probe sees it.
"""

import zoo_base


class BodyForHead(zoo_base.Conn):
    def render(self, req, ans):
        if not ans.head_only:
            return super().render(req, ans)
        head = self.head(req, ans, [("Content-Length", str(len(ans.body)))])
        return [head + ans.body]


class TextForHead(zoo_base.Conn):
    def render(self, req, ans):
        if not ans.head_only:
            return super().render(req, ans)
        text = (b"HEAD request handled. " * 4)[: self.param]
        return [self.head(req, ans, [("Content-Length", "0")]) + text]


class A(zoo_base.Server):
    conn_class = BodyForHead


class B(zoo_base.Server):
    conn_class = TextForHead


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B}, param={"a": None, "b": (1, 64, 12)})
