"""Defect: malformed chunked encoding. Check bad-chunked (fail).

Both variants send 200 answers to HTTP/1.1 GETs with
`Transfer-Encoding: chunked`, in chunks of PARAM+16 bytes, and keep the
connection. A body shorter than PARAM+16 bytes is padded with newlines
to that size, so at least one chunk is 17 bytes or more.
a  Chunk sizes are written in decimal (`17` for seventeen bytes, which
   a client reads as 0x17 = 23).
b  Sizes are right (hex), but the CRLF after each chunk's data is
   missing.
HEAD, 404, 405 and answers to HTTP/1.0 are correct.
PARAM: 1..50 (default 4).

Other probes: every probe that reads a 200 answer fails to decode it.
"""

import zoo_base


class Chunked(zoo_base.Conn):
    def affected(self, req, ans):
        return (
            ans.status == 200
            and not ans.head_only
            and req is not None
            and req.version == "HTTP/1.1"
        )

    def render(self, req, ans):
        if not self.affected(req, ans):
            return super().render(req, ans)
        size = self.param + 16
        body = ans.body.ljust(size, b"\n")
        out = bytearray(self.head(req, ans, [("Transfer-Encoding", "chunked")]))
        for i in range(0, len(body), size):
            out += self.chunk(body[i : i + size])
        out += b"0\r\n\r\n"
        return [bytes(out)]


class Decimal(Chunked):
    def chunk(self, data):
        return b"%d\r\n%s\r\n" % (len(data), data)


class NoCrlf(Chunked):
    def chunk(self, data):
        return b"%x\r\n%s" % (len(data), data)


class A(zoo_base.Server):
    conn_class = Decimal


class B(zoo_base.Server):
    conn_class = NoCrlf


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B}, param=(1, 50, 4))
