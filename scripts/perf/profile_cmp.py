#!/usr/bin/env python3
"""Two servers' cpu-clock profiles (scripts/perf/profile.sh) side by side,
in µs of CPU per request: the kernel / own code / libc split, then the symbols
whose cost differs most. With one server, its split and its costliest
symbols outside the kernel.

Usage: profile_cmp.py DIR A [B] [TOP]
  DIR holds A.data and A.n (requests answered), B.data and B.n.

Read the symbols with care: cpu-clock samples come from a timer interrupt,
and one that arrives while the kernel has interrupts off is taken on the
return to user space, so the first user instructions after a syscall (the
clock read after epoll_wait or io_uring_enter) collect samples that belong
to the kernel.
"""

import collections
import re
import subprocess
import sys


def load(d, name):
    try:
        with open(f"{d}/{name}.n") as f:
            n = int(f.read().split()[0])
    except (OSError, ValueError, IndexError) as e:
        sys.exit(f"{name}: no request count in {d}/{name}.n ({e}); run scripts/perf/profile.sh {name}")
    if n <= 0:
        sys.exit(f"{name}: no request answered")
    path = f"{d}/{name}.data"
    rows = subprocess.run(
        ["perf", "report", "-i", path, "--no-children", "--sort", "dso,sym",
         "--stdio", "-q", "-F", "overhead,dso,sym"],
        capture_output=True, text=True, check=True,
    ).stdout
    # cpu-clock's event count is in ns of CPU.
    total = subprocess.run(
        ["perf", "report", "-i", path, "--stdio"],
        capture_output=True, text=True, check=True,
    ).stdout
    m = re.search(r"Event count \(approx\.\): (\d+)", total)
    if not m:
        sys.exit(f"{name}: no samples in {path}")
    us = int(m.group(1)) / 1e3 / n
    # profile.sh's reasons this server's figure is not like for like.
    try:
        with open(f"{d}/{name}.warn") as f:
            for line in f:
                print(f"WARNING {line.rstrip()}")
    except OSError:
        print(f"WARNING {name}: no {d}/{name}.warn, so failures and a missed rate are not checked")
    cost = collections.Counter()
    for line in rows.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[.\]\s+(.*)$", line)
        if m:
            sym = re.sub(r"::h[0-9a-f]{16}$", "", m.group(3).strip())
            cost[(m.group(2), sym)] += float(m.group(1)) / 100 * us
    return cost, us


def part(dso):
    """kernel, libc (with the vDSO's clock), or the server's own code."""
    if "kernel" in dso:
        return "kernel"
    return "libc" if dso.startswith("libc") or dso == "[vdso]" else "own"


def main():
    args = sys.argv[1:]
    top = int(args.pop()) if len(args) > 2 and args[-1].isdigit() else 30
    if len(args) not in (2, 3):
        sys.exit(__doc__.strip())
    d, a = args[:2]
    ca, ta = load(d, a)
    if len(args) == 2:
        split = collections.Counter()
        for (dso, _), v in ca.items():
            split[part(dso)] += v
        print(f"CPU per request: {a} {ta:.3f} µs: " + ", ".join(f"{p} {split[p]:.3f}" for p in ("kernel", "own", "libc")))
        own = [(v, k) for k, v in ca.items() if part(k[0]) != "kernel"]
        for v, k in sorted(own, reverse=True)[:top]:
            print(f"{v:9.3f}  {k[1][:100]}")
        return
    b = args[2]
    cb, tb = load(d, b)
    print(f"CPU per request: {a} {ta:.3f} µs, {b} {tb:.3f} µs ({tb - ta:+.3f})")
    pa, pb = collections.Counter(), collections.Counter()
    for (dso, _), v in ca.items():
        pa[part(dso)] += v
    for (dso, _), v in cb.items():
        pb[part(dso)] += v
    for p in ("kernel", "own", "libc"):
        print(f"  {p:7s} {pa[p]:7.3f} {pb[p]:7.3f} {pb[p] - pa[p]:+7.3f}")
    print(f"\n{a:>9s} {b:>9s}     diff  symbol (µs per request)")
    for k in sorted(set(ca) | set(cb), key=lambda k: -abs(cb[k] - ca[k]))[:top]:
        print(f"{ca[k]:9.3f} {cb[k]:9.3f} {cb[k] - ca[k]:+8.3f}  {k[1][:90]}")


if __name__ == "__main__":
    main()
