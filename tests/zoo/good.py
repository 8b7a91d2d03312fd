"""A correct server: no defect. The control group for `loadlab check`.

Variants (same behaviour, two IO models, so a check is not tuned to one):
  a  a thread per connection, blocking sockets
  b  one selectors loop, non-blocking sockets, no threads
PARAM: unused; any integer is accepted.
"""

import zoo_base


class Threads(zoo_base.Server):
    model = "threads"


class Selectors(zoo_base.Server):
    model = "selectors"


if __name__ == "__main__":
    zoo_base.main({"a": Threads, "b": Selectors})
