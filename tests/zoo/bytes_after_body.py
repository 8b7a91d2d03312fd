"""Defect: bytes after the body. Check bytes-after-body (fail).

a  Every answer says `Connection: close`, and after its body PARAM more
   bytes (CRLF pairs, like a stray trailing newline write) are sent
   before the connection is closed. HEAD answers have no body and get
   no extra bytes.
b  The connection is kept, but Content-Length counts the characters of
   the body, not its bytes: each body ends in a footer of PARAM
   non-ASCII characters (U+00E9), two bytes each in UTF-8, so PARAM
   bytes follow where the client expects the next answer.
PARAM: 1..8, the number of extra bytes (default 2).

Other probes: with (b) the second of two pipelined answers starts with
the extra bytes, so pipelining fails too; with (a) a pipelined second
request is never answered (the first answer said close, as allowed).
"""

import zoo_base


class ExtraAfterClose(zoo_base.Conn):
    def render(self, req, ans):
        ans.keep = False
        parts = super().render(req, ans)
        if ans.head_only:
            return parts
        return parts + [(b"\r\n" * 4)[: self.param]]


class CharacterCount(zoo_base.Conn):
    def render(self, req, ans):
        footer = "\u00e9" * self.param
        length = len(ans.body) + len(footer)  # characters, not bytes
        head = self.head(req, ans, [("Content-Length", str(length))])
        if ans.head_only:
            return [head]
        return [head + ans.body + footer.encode("utf-8")]


class A(zoo_base.Server):
    conn_class = ExtraAfterClose


class B(zoo_base.Server):
    conn_class = CharacterCount


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B}, param=(1, 8, 2))
