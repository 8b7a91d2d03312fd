"""Defect: a request can read files outside ROOT. Check path-traversal
(fail).

a  The path is percent-decoded and joined to ROOT with no check
   (leading slashes stripped), so `/../x`, `/%2e%2e/x`, `/..%2fx` and
   `/%2e%2e%2fx` all escape, and 8 levels of `..` reach /etc/passwd.
   The query string is ignored, as it should be.
b  The path is checked correctly, but a `file` or `path` query
   parameter, when present, names the file to serve relative to ROOT,
   unchecked: `/?file=../x`, `/index.html?path=..%2fx`.
PARAM: unused; any integer is accepted.
"""

import os
from urllib.parse import parse_qsl

import zoo_base


class JoinDecoded(zoo_base.Conn):
    def resolve(self, target):
        path = target.split("?", 1)[0]
        rel = zoo_base.percent_decode(path).lstrip(b"/")
        full = os.path.join(self.server.root, rel)
        if os.path.isdir(full):
            full = os.path.join(full, b"index.html")
        return full


class QueryFile(zoo_base.Conn):
    def resolve(self, target):
        query = target.partition("?")[2]
        for name, value in parse_qsl(query, encoding="latin-1"):
            if name in ("file", "path"):
                return os.path.join(self.server.root, value.encode("latin-1"))
        return super().resolve(target)


class A(zoo_base.Server):
    conn_class = JoinDecoded


class B(zoo_base.Server):
    conn_class = QueryFile


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B})
