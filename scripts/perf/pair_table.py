#!/usr/bin/env python3
"""Each pair's median ratio of server CPU per request (server / reference)
over the rounds of scripts/perf/pair.sh, with the sign test's interval
and every round's value; says which rounds are not like for like.

Usage: pair_table.py PAIR_TXT RATE
"""
import statistics as st
import sys

from signtest import interval, sign_test_k


def main(path, rate):
    rows = [l.split() for l in open(path) if l.strip() and not l.startswith("#")]
    pairs = {}
    for p, r, ref, srv, rns, sns, ratio, rn, sn, bad, achieved in rows:
        pairs.setdefault(p, []).append(
            (int(r), float(rns), float(sns), float(ratio), int(bad), float(achieved))
        )
    print("\n| server / reference | rounds | median ratio | interval | reference µs/req | server µs/req | every round |")
    print("|---|---|---|---|---|---|---|")
    for p, rs in pairs.items():
        ref, srv = p.split(":", 1)
        ratios = [x[3] for x in rs]
        k, conf = sign_test_k(len(ratios))
        print(
            f"| {srv} / {ref} | {len(rs)} | {st.median(ratios):.3f} | {interval(ratios, 3)} ({conf:.0%}) "
            f"| {st.median(x[1] for x in rs) / 1000:.2f} | {st.median(x[2] for x in rs) / 1000:.2f} "
            f"| {' '.join(f'{x:.3f}' for x in ratios)} |"
        )
        for r, _, _, _, bad, achieved in rs:
            if bad:
                print(f"  {p} round {r}: {bad} requests failed or were not 2xx: not like for like")
            if achieved < 0.97 * rate / 2:
                print(f"  {p} round {r}: a server answered {achieved:.0f} of {rate / 2:.0f} requests/s offered: it fell behind")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: pair_table.py PAIR_TXT RATE")
    main(sys.argv[1], float(sys.argv[2]))
