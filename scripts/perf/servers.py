#!/usr/bin/env python3
"""Tables for the perf suite's rows 1, 2 and 6 (scripts/perf/run.sh).

Usage: servers.py [--rounds] [--rate R] ROWS_FILE CONNECTIONS SERVER...
       --rounds: every round's figures instead, one line per server and round
       --rate R: the rows were run open loop at R requests/s offered
       (run.sh's PERF_RATE; loadlab bench alone, wrk has no fixed rate)

ROWS_FILE has one line per (round, keep-alive, server, client) run:
round ka server client rps p99_ms requests cpu0_pct cpu1_pct cpu_ns switches
where cpu_ns and switches are what the server's own process tree used
during the run (scripts/perf/tree_usage.py).

Server CPU per request is that process-tree time over the requests the
client completed: other work on CPU 0 (the host is shared) is not in it.
Every ratio is the median of per-round paired ratios (both servers
measured in the same round, minutes apart at most), printed with its
range and every round's value in round order. With 7 rounds the range
[min, max] of the per-round ratios covers the true median ratio with
probability 1 - 2 / 2**7 = 98.4 % (sign test), so a range that excludes
1.00 is a difference beyond the interval.
"""
import statistics as st
import sys

from signtest import interval, sign_test_k

args = sys.argv[1:]
every_round = args[:1] == ["--rounds"]
args = args[1:] if every_round else args
rate = None
if args[:1] == ["--rate"]:
    rate, args = args[1], args[2:]
rows_file, conc, servers = args[0], args[1], args[2:]
d = {}
for line in open(rows_file):
    rnd, ka, s, c, rps, p99, n, cpu0, cpu1, ns, sw = line.split()
    d[(rnd, ka, s, c)] = dict(rps=float(rps), p99=float(p99), n=float(n) or 1,
                              cpu0=float(cpu0), cpu1=float(cpu1),
                              us=float(ns) / 1e3 / (float(n) or 1),
                              sw=float(sw) / (float(n) or 1))
rounds = sorted({k[0] for k in d}, key=int)
# The clients the rows hold, wrk first when there: the main table's
# rate, p99, CPU and switch columns and the ungated ratios are its.
clients = [c for c in ("wrk", "loadlab") if any(k[3] == c for k in d)]
main = clients[0]
load = f"open loop, {rate} requests/s offered" if rate else "closed loop"


def per_round(ka, s, ref, c, field):
    """s's figure over ref's, one ratio per round (round order)."""
    return [d[(r, ka, s, c)][field] / (d[(r, ka, ref, c)][field] or 1) for r in rounds]


def med(ka, s, c, field):
    return st.median(d[(r, ka, s, c)][field] for r in rounds)


def spread(xs):
    return f"{st.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"


def pairs(present):
    """(server, reference, gated): every server against the floor and nginx;
    the pairs the issues set targets or decisions on also under loadlab."""
    out = []
    for s in present:
        base = s.split(":")[0]
        for ref in ("floor", "nginx"):
            if s not in (ref, "floor") and ref in present:
                # model subset: issue 23 holds these two to the epoll floor.
                out.append((s, ref, s in ("event-loop", "reactors") and ref == "floor"))
        # io-uring against its own floor (issue 20: at most 1.1 x).
        if base == "io-uring" and "floor-uring" in present:
            out.append((s, "floor-uring", True))
        # async (1 worker) against Go with GOMAXPROCS=1 (at most 0.7 x).
        if s == "async" and "go" in present:
            out.append((s, "go", True))
        # model subset: async-local against async with the same workers
        # (issue 20: keep it as a model only if it differs).
        if base == "async-local":
            twin = "async" + s[len("async-local"):]  # model subset: its twin
            if twin in present:
                out.append((s, twin, True))
    return out


if every_round:
    cols = "".join(f" {c} req/s | server µs/req ({c}) | switches/req ({c}) |" for c in clients)
    print(f"| row | round | server |{cols}")
    print("|---|---|---|" + "---|---|---|" * len(clients))
    for ka, row in (("on", f"1, keep-alive, c={conc}, {load}"),
                    ("off", f"2, new connection, c={conc}, {load}")):
        for r in rounds:
            for s in sorted({k[2] for k in d if k[1] == ka}, key=lambda s: (servers + [s]).index(s)):
                runs = [d.get((r, ka, s, c)) for c in clients]
                if all(runs):
                    cells = "".join(f" {x['rps']:.0f} | {x['us']:.2f} | {x['sw']:.3f} |" for x in runs)
                    print(f"| {row} | {r} | {s} |{cells}")
    sys.exit(0)

for ka, title in (("on", f"Row 1/6: keep-alive, 500 B, c={conc}"),
                  ("off", f"Row 2/6: new connection per request, 500 B, c={conc}")):
    if not any(k[1] == ka for k in d):
        continue  # PERF_KA left this row out
    present = servers + (["nginx-nodefer", "reactors-nodefer"] if ka == "off" else [])
    present = [s for s in present if all((r, ka, s, main) in d for r in rounds)]
    print(f"\n{title}, {load} (server on CPU 0, client on CPU 1; medians of {len(rounds)} rounds)")
    print(f"(CPU 0 / CPU 1 %: how busy the server's and the client's core were under {main}, "
          "the one at 100 % sets the rate; server µs/req and switches/req: the server's "
          "own process tree, all threads and processes)")
    head = "".join(f" {c} req/s | {c} p99 ms |" for c in clients)
    print(f"| server |{head} req/s vs nginx ({main}) | req/s vs floor ({main}) | CPU 0 % | CPU 1 % |"
          + "".join(f" server µs/req ({c}) |" for c in clients) + f" switches/req ({main}) |")
    print("|---|" + "---|---|" * len(clients) + "---|---|---|---|" + "---|" * len(clients) + "---|")
    for s in present:
        rates = "".join(f" {med(ka, s, c, 'rps'):.0f} | {med(ka, s, c, 'p99'):.2f} |" for c in clients)
        cpus = "".join(f" {med(ka, s, c, 'us'):.2f} |" for c in clients)
        print(f"| {s} |{rates} {st.median(per_round(ka, s, 'nginx', main, 'rps')):.2f} "
              f"| {st.median(per_round(ka, s, 'floor', main, 'rps')):.2f} "
              f"| {med(ka, s, main, 'cpu0'):.0f} | {med(ka, s, main, 'cpu1'):.0f} |{cpus} "
              f"{med(ka, s, main, 'sw'):.3f} |")
    if rate:
        # A server that fell behind the offered rate found more requests
        # per wake-up than the others: its CPU per request is not like
        # for like, so every such round is named.
        short = [f"{s} round {r} ({d[(r, ka, s, main)]['rps']:.0f} req/s)"
                 for s in present for r in rounds
                 if d[(r, ka, s, main)]["rps"] < 0.97 * float(rate)]
        print("\nBehind the offered rate (under 97 %), so not comparable by CPU per request: "
              + (", ".join(short) if short else "none"))
        print("(CPU 0 % is /proc/stat's, which lags when the core idles often, as it does "
              "at an offered rate: read the server's own µs/req instead)")
    k, cover = sign_test_k(len(rounds))
    print(f"\nServer CPU per request, ratios (median of per-round ratios (min-max); the median's "
          f"interval: the {k}th smallest to the {k}th largest round, which holds the true median "
          f"with probability {100 * cover:.1f} % (sign test); every round in order)")
    print("| server | vs | client | CPU/req ratio | median's interval | every round | req/s ratio (min-max) |")
    print("|---|---|---|---|---|---|---|")
    for s, ref, gated in pairs(present):
        for c in clients if gated else (main,):
            cpu = per_round(ka, s, ref, c, "us")
            rps = per_round(ka, s, ref, c, "rps")
            print(f"| {s} | {ref} | {c} | {spread(cpu)} | {interval(cpu)} "
                  f"| {', '.join(f'{x:.2f}' for x in cpu)} | {spread(rps)} |")
