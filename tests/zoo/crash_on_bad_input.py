"""Defect: bad input kills the whole server process. Check
crash-on-bad-input (fail).

a  Threads; each head is decoded as UTF-8, and a decode error (a header
   value such as `\\xff\\xfe\\xc3\\x28`, legal obs-text) ends the process
   with os._exit(PARAM).
b  One selectors loop, no threads; a header line without a colon raises
   an exception that nothing catches, so the loop, and the process,
   exit (status 1, traceback on stderr).
Until then everything is correct.
PARAM: 1..9, the exit status of (a) (default 3). Unused by (b), which
accepts any integer.

Other probes: every probe after the crash finds nothing listening.
"""

import os

import zoo_base


class DiesOnUtf8(zoo_base.Conn):
    def parse_head(self, raw):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            os._exit(self.param)
        return super().parse_head(raw)


class DiesOnNoColon(zoo_base.Conn):
    def parse_header_line(self, line):
        name, value = line.split(":", 1)  # ValueError without a colon
        return super().parse_header_line(f"{name}:{value}")


class A(zoo_base.Server):
    conn_class = DiesOnUtf8


class B(zoo_base.Server):
    model = "selectors"
    conn_class = DiesOnNoColon


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B}, param={"a": (1, 9, 3), "b": None})
