"""Row 3 of scripts/perf/run.sh: E3 (10,000 requests at c = 10,000, 2
workers) from the sweep's raw.csv, judged as issue 23 item 3 asks: time
as a ratio to the floor responder's (target <= 1.05), failed requests
(target 0) and peak RSS as a ratio to nginx's (target <= 0.3). The sweep
interleaves the targets within each repeat, so a ratio is the median of
the per-repeat ratios (each between runs seconds apart, which cancels the
host's drift), printed with its range and every repeat's value.

Usage: python3 scripts/perf/e3.py RAW_CSV
"""

import csv
import statistics as st

from signtest import interval, sign_test_k
import sys

FLOOR = "floor:workers=2"
LOADLAB = "model:reactors:workers=2"
NGINX = "nginx:workers=2"
TARGETS = (FLOOR, LOADLAB, NGINX, "reactors:workers=2, no defer", "nginx:workers=2, no defer")
PATHS = ("/500B.html", "/20KB.html")
# Issue 23 item 3.
TIME_VS_FLOOR_MAX = 1.05
RSS_VS_NGINX_MAX = 0.3


def name(target):
    """The cmd: targets (the floor and the no-defer variants) by what they run."""
    if not target.startswith("cmd:"):
        return target
    if "floor_server" in target:
        return FLOOR
    return "reactors:workers=2, no defer" if "loadlab serve" in target else "nginx:workers=2, no defer"


def load(path):
    runs = {}
    errors = []
    for r in csv.DictReader(open(path)):
        if r["warmup"] != "false":
            continue
        if r.get("error"):
            errors.append(f"{name(r['target'])} {r['path']} repeat {r['repeat']}: {r['error']}")
            continue
        runs[(name(r["target"]), r["path"], int(r["repeat"]))] = (
            float(r["time_taken_s"]),
            int(r["failed"]),
            float(r["server_cpu_pct"]),
            int(r["server_rss_peak_kb"]) / 1024,
        )
    return runs, errors


def ratios(runs, a, b, path, field):
    """Per-repeat a / b of one field, in repeat order."""
    reps = sorted({k[2] for k in runs if k[1] == path})
    return [runs[(a, path, n)][field] / runs[(b, path, n)][field]
            for n in reps if (a, path, n) in runs and (b, path, n) in runs and runs[(b, path, n)][field]]


def summary(xs):
    if not xs:
        return "n/a"
    return (f"{st.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f}; the median's interval "
            f"{interval(xs, 3)}, {100 * sign_test_k(len(xs))[1]:.1f} %); per repeat: "
            + " ".join(f"{x:.3f}" for x in xs))


def main():
    runs, errors = load(sys.argv[1])
    for e in errors:
        print(f"ERROR: {e}")
    print("| target | path | time taken s | failed | server CPU % | peak RSS MiB | time vs floor | time vs nginx | RSS vs nginx |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in PATHS:
        for t in TARGETS:
            if t == FLOOR and path != "/500B.html":
                continue  # it sent 500 B there too: no floor for a larger file
            rs = [v for k, v in runs.items() if k[0] == t and k[1] == path]
            if not rs:
                continue
            vs_floor = ratios(runs, t, FLOOR, path, 0)
            vs_nginx = ratios(runs, t, NGINX, path, 0)
            rss = ratios(runs, t, NGINX, path, 3)
            med = lambda xs: f"{st.median(xs):.2f}" if xs else "-"
            print(f"| {t} | {path} | {st.median(v[0] for v in rs):.3f} | {sum(v[1] for v in rs)} "
                  f"| {st.median(v[2] for v in rs):.0f} | {st.median(v[3] for v in rs):.1f} "
                  f"| {med(vs_floor) if path == '/500B.html' else '-'} | {med(vs_nginx)} | {med(rss)} |")
    print()
    print("Every repeat (time s / failed / peak RSS MiB):")
    for path in PATHS:
        for t in TARGETS:
            if t == FLOOR and path != "/500B.html":
                continue  # 500 B again, as above
            keys = sorted(k for k in runs if k[0] == t and k[1] == path)
            if keys:
                print(f"  {t} {path}: " + "  ".join(
                    f"{runs[k][0]:.3f}/{runs[k][1]}/{runs[k][3]:.1f}" for k in keys))
    print()
    print("Issue 23 item 3 (reactors, 2 workers; ratios are medians of per-repeat ratios, range, every repeat):")
    t_floor = ratios(runs, LOADLAB, FLOOR, "/500B.html", 0)
    print(f"  time vs the floor responder, 500 B: {summary(t_floor)}; target <= {TIME_VS_FLOOR_MAX}")
    for path in PATHS:
        print(f"  time vs nginx, {path}: {summary(ratios(runs, LOADLAB, NGINX, path, 0))}")
        print(f"  peak RSS vs nginx, {path}: {summary(ratios(runs, LOADLAB, NGINX, path, 3))}; target <= {RSS_VS_NGINX_MAX}")
    failed = sum(v[1] for k, v in runs.items() if k[0] == LOADLAB)
    print(f"  failed requests (reactors, every repeat and path): {failed}; target 0")
    met = (bool(t_floor) and st.median(t_floor) <= TIME_VS_FLOOR_MAX and failed == 0 and not errors
           and all(st.median(r) <= RSS_VS_NGINX_MAX
                   for r in (ratios(runs, LOADLAB, NGINX, p, 3) for p in PATHS) if r))
    print(f"  met: {'yes' if met else 'no'}")


if __name__ == "__main__":
    main()
