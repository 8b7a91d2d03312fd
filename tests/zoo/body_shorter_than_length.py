"""Defect: the body is shorter than Content-Length, then the connection
closes. Check body-shorter-than-length (fail).

a  Content-Length says PARAM bytes more than the body has (the length
   of a template with its placeholder, not of the filled-in text); the
   whole body is sent, then the connection is closed.
b  Content-Length is right, but only the first half of the body is
   written (a writer that stops after its first partial write), then
   the connection is closed.
Both say `Connection: close`, so only the body is wrong. HEAD and
answers without a body are correct.
PARAM: 1..64, how many bytes (a) claims too many (default 8). Unused by
(b), which always withholds the second half (ROOT/index.html must not
be empty); it accepts any integer.

Other probes: any probe that reads a GET answer sees it cut short.
"""

import zoo_base


class LengthTooLarge(zoo_base.Conn):
    def render(self, req, ans):
        if ans.head_only or not ans.body:
            return super().render(req, ans)
        ans.keep = False
        claimed = len(ans.body) + self.param
        return [self.head(req, ans, [("Content-Length", str(claimed))]) + ans.body]


class HalfWritten(zoo_base.Conn):
    def render(self, req, ans):
        if ans.head_only or not ans.body:
            return super().render(req, ans)
        ans.keep = False
        head = self.head(req, ans, [("Content-Length", str(len(ans.body)))])
        return [head + ans.body[: len(ans.body) // 2]]


class A(zoo_base.Server):
    conn_class = LengthTooLarge


class B(zoo_base.Server):
    conn_class = HalfWritten


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B}, param={"a": (1, 64, 8), "b": None})
