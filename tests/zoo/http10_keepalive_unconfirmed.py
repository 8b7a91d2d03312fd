"""Defect: an HTTP/1.0 request with `Connection: keep-alive` is kept open
but the answer does not confirm it, so the client has to wait for a
close. Check http10-keepalive-unconfirmed (fail).

a  The answer is worded like a plain HTTP/1.0 one (`HTTP/1.0 200 OK`, no
   Connection header), while the connection is kept.
b  `HTTP/1.1 200 OK` with a `Keep-Alive: timeout=60` header but no
   `Connection: keep-alive` token, connection kept.
HTTP/1.0 without keep-alive is closed correctly.
PARAM: unused; any integer is accepted.
"""

import zoo_base


def wants_keep_alive(req):
    return req is not None and req.version == "HTTP/1.0" and "keep-alive" in req.tokens("connection")


class Unconfirmed(zoo_base.Conn):
    def status_line(self, req, ans):
        version = req.version if req is not None else "HTTP/1.1"
        return f"{version} {ans.status} {zoo_base.REASONS[ans.status]}"

    def connection_headers(self, req, keep):
        if keep and wants_keep_alive(req):
            return []
        return super().connection_headers(req, keep)


class ParameterOnly(zoo_base.Conn):
    def connection_headers(self, req, keep):
        if keep and wants_keep_alive(req):
            return [("Keep-Alive", "timeout=60")]
        return super().connection_headers(req, keep)


class A(zoo_base.Server):
    conn_class = Unconfirmed


class B(zoo_base.Server):
    conn_class = ParameterOnly


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B})
