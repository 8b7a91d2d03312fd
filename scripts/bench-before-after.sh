#!/usr/bin/env bash
# The load generator's own cost, before and after a change: two loadlab
# binaries run the same keep-alive load against the floor responder
# (examples/floor_server.rs, pinned to CPU 0; it answers faster than one
# client core asks, so the client sets the rate), each pinned to CPU 1, in
# alternating order over ROUNDS paired rounds. Prints each round's client
# CPU per request (user+sys from /usr/bin/time over completed requests) and
# the median of the per-round ratios AFTER / BEFORE with its range.
#
# Usage: scripts/bench-before-after.sh BEFORE_BIN AFTER_BIN [ROUNDS] [SECONDS] [C]
#        (defaults 7, 3 and 50). Loopback only; every run lasts SECONDS.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
BEFORE=$1 AFTER=$2 ROUNDS=${3:-7} SECS=${4:-3} C=${5:-50}
for b in "$BEFORE" "$AFTER"; do [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }; done
[ -x /usr/bin/time ] || { echo "missing /usr/bin/time (apt-get install time)" >&2; exit 1; }
cargo build --release --quiet --example floor_server
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 0 target/release/examples/floor_server "$port" >"$work/floor.out" 2>&1 &
floor=$!
trap 'kill $floor 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
url="http://127.0.0.1:$port/500B.html"
# One run; prints client CPU µs per completed request.
one() { # binary
    /usr/bin/time -f '%U %S' -o "$work/time" taskset -c 1 "$1" bench -q -k -c "$C" -t "$SECS" \
        --threads 1 --format json --out "$work/run.json" "$url" >/dev/null 2>&1
    python3 - "$work/time" "$work/run.json" <<'PY'
import json, sys
u, s = map(float, open(sys.argv[1]).read().split()[-2:])
n = json.load(open(sys.argv[2]))["complete"]
print(f"{(u + s) / n * 1e6:.3f}")
PY
}
ratios=()
printf '%-6s %12s %12s %8s\n' round "before µs" "after µs" ratio
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then b=$(one "$BEFORE"); a=$(one "$AFTER"); else a=$(one "$AFTER"); b=$(one "$BEFORE"); fi
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a / b}')
    ratios+=("$ratio")
    printf '%-6s %12s %12s %8s\n' "$r" "$b" "$a" "$ratio"
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{v[NR]=$1} END {m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "after / before: median %.3f (range %.3f-%.3f) over %d paired rounds, c=%s\n", m, v[1], v[NR], NR, ENV_C}' ENV_C="$C"
