"""Defect: malformed requests are accepted and answered 200 instead of
400. Check bad-input-accepted (warn).

a  A header line without a colon is skipped.
b  A request line with more than three parts is read as its first
   three (`GET /index.html HTTP/1.1 extra` serves /index.html).
Everything else is parsed strictly.
PARAM: unused; any integer is accepted.
"""

import zoo_base


class SkipsNoColon(zoo_base.Conn):
    def parse_header_line(self, line):
        if ":" not in line:
            return None
        return super().parse_header_line(line)


class FirstThreeParts(zoo_base.Conn):
    def split_request_line(self, line):
        parts = line.split(" ")
        if len(parts) < 3:
            raise zoo_base.BadRequest(400)
        return parts[:3]


class A(zoo_base.Server):
    conn_class = SkipsNoColon


class B(zoo_base.Server):
    conn_class = FirstThreeParts


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B})
