"""Defect: a malformed status line on every final answer. Check
bad-status-line (fail).

a  `HTTP/1.1 OK 200`: reason and code swapped.
b  `HTTP 200 OK`: the version has no `/1.1`.
Headers, bodies and connection handling are correct; `100 Continue` is
well-formed.
PARAM: unused; any integer is accepted.

Other probes: every probe reads a status line, so every probe that
needs an answer fails to parse one.
"""

import zoo_base


class Swapped(zoo_base.Conn):
    def status_line(self, req, ans):
        return f"HTTP/1.1 {zoo_base.REASONS[ans.status]} {ans.status}"


class NoVersion(zoo_base.Conn):
    def status_line(self, req, ans):
        return f"HTTP {ans.status} {zoo_base.REASONS[ans.status]}"


class A(zoo_base.Server):
    conn_class = Swapped


class B(zoo_base.Server):
    conn_class = NoVersion


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B})
