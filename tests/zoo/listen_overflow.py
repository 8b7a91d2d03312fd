"""Defect: a tiny listen backlog, so a burst of connects overflows the
accept queue: the kernel drops SYNs (counted in TcpExtListenOverflows)
and the clients retry after 1 s, 3 s, 7 s, ... Check
listen-overflow (fail).

Both variants listen with backlog PARAM (as in `listen(1)` copied from
an example) and serve each connection in its own thread.
a  Nothing else: the accept loop is as fast as Python gets, which does
   not keep up with a hundred SYNs arriving within a millisecond or two.
b  The accept loop also paces itself: when another connection is
   already waiting after an accept, it sleeps 50 ms ("let the workers
   catch up"), so even a slow burst overflows.
Why nothing else trips: every connection has its own thread as soon as
it is accepted, so idle or slow clients block nobody (slowloris,
idle keep-alive), and clients connecting one at a time never wait.
PARAM: 0..2, the listen backlog (default 0; Linux then queues one).

Other probes: the burst itself is slow to finish (the SYN retries of
the dropped connects collide again; some are not answered after 15 s).
The 16 concurrent connections may see a connect take a SYN retry (1 s
or more) when they are opened all at once; their answers are right.
"""

import select
import time

import zoo_base


class Small(zoo_base.Server):
    def __init__(self, port, root, param):
        super().__init__(port, root, param)
        self.backlog = param


class Paced(Small):
    def dispatch(self, sock):
        super().dispatch(sock)
        if select.select([self.listener], [], [], 0)[0]:
            time.sleep(0.05)


if __name__ == "__main__":
    zoo_base.main({"a": Small, "b": Paced}, param=(0, 2, 0))
