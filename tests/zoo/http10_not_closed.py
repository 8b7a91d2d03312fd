"""Defect: an HTTP/1.0 request without `Connection: keep-alive` is
answered and the connection left open; the client waits for a close
that does not come. Check http10-not-closed (fail).

a  The answer echoes the request's version (`HTTP/1.0 200 OK`) with
   Content-Length and no Connection header, but the connection is
   handled by the HTTP/1.1 rule (kept unless `close`).
b  The version of the request is ignored altogether: `HTTP/1.1 200 OK`,
   no Connection header, connection kept.
`Connection: close` is still honoured, and HTTP/1.0 with keep-alive is
answered correctly.
PARAM: unused; any integer is accepted.
"""

import zoo_base


class Http11Rule(zoo_base.Conn):
    def persist(self, req):
        return "close" not in req.tokens("connection")


class EchoesVersion(Http11Rule):
    def status_line(self, req, ans):
        version = req.version if req is not None else "HTTP/1.1"
        return f"{version} {ans.status} {zoo_base.REASONS[ans.status]}"


class A(zoo_base.Server):
    conn_class = EchoesVersion


class B(zoo_base.Server):
    conn_class = Http11Rule


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B})
