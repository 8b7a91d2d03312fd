"""Defect: no valid Date header. Check bad-date (warn).

a  No Date header at all.
b  A Date header in the wrong format: PARAM 0 gives ISO 8601
   (`2026-11-28T04:10:17+00:00`), PARAM 1 gives ctime/asctime
   (`Sat Nov 28 04:10:17 2026`), which senders must not generate.
PARAM: 0..1, the format used by (b) (default 0). Unused by (a), which
accepts any integer.
"""

import time
from datetime import datetime, timezone

import zoo_base


class NoDate(zoo_base.Conn):
    def date_value(self):
        return None


class OtherFormat(zoo_base.Conn):
    def date_value(self):
        if self.param == 0:
            return datetime.now(timezone.utc).isoformat(timespec="seconds")
        return time.asctime(time.gmtime())


class A(zoo_base.Server):
    conn_class = NoDate


class B(zoo_base.Server):
    conn_class = OtherFormat


if __name__ == "__main__":
    zoo_base.main({"a": A, "b": B}, param={"a": None, "b": (0, 1, 0)})
