#!/usr/bin/env bash
# Where each server's CPU time goes per request, kernel and user space, at
# an offered rate: a cpu-clock profile (perf record) of the server while
# loadlab bench offers RATE requests/s on c connections, keep-alive.
#
# Usage: scripts/perf/profile.sh [SERVER...]
#   SERVER   floor, floor-uring, or any loadlab model (--workers 1);
#            default: floor-uring io-uring
#   RATE     requests/s offered (default 60000), C connections (1000),
#            SECS of profile (4)
#   OUT      where NAME.data (perf's) and NAME.n (requests answered) go
#            (default target/perf/profile)
# Then compare two of them, symbol by symbol, in µs per request:
#   python3 scripts/perf/profile_cmp.py target/perf/profile floor-uring io-uring
#
# Why: CPU per request at c = 1000 differs between a model and its floor
# by 0.5-1 µs, and callgrind's instruction counts do not see what much of
# it is (memory the cache dropped). cpu-clock samples need no hardware
# counters, which this VM does not expose to perf. As every per-request
# figure here, the totals drift with the host: compare two servers from
# the same run, and a symbol's share rather than the total.
#
# Server on CPU 0, client on CPU 1, both on 127.0.0.1; each run is bounded
# by SECS and stops by itself.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/perf/lib.sh

SERVERS=("$@")
[ ${#SERVERS[@]} -gt 0 ] || SERVERS=(floor-uring io-uring)
RATE=${RATE:-60000}
C=${C:-1000}
SECS=${SECS:-4}
OUT=${OUT:-${CARGO_TARGET_DIR:-target}/perf/profile}
for v in RATE C SECS; do
  case "${!v}" in '' | *[!0-9]* | 0) echo "$v must be a positive number (got '${!v}')" >&2; exit 2 ;; esac
done
command -v perf >/dev/null || { echo "perf is not installed (Debian: linux-perf)" >&2; exit 2; }

# The release build with debug info, so perf resolves inlined frames.
BIN=${CARGO_TARGET_DIR:-target}/profiling
cargo build --profile profiling --quiet --bin loadlab --example floor_server --example floor_uring
mkdir -p "$OUT"

SPID=
PPID_=
cleanup() {
  [ -n "$PPID_" ] && kill -INT "$PPID_" 2>/dev/null && wait "$PPID_" 2>/dev/null
  [ -n "$SPID" ] && kill -9 "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  true
}
trap cleanup EXIT

for s in "${SERVERS[@]}"; do
  PORT=$(free_port)
  case "$s" in
    floor) cmd=("$BIN/examples/floor_server" "$PORT") ;;
    floor-uring) cmd=("$BIN/examples/floor_uring" "$PORT") ;;
    *) cmd=("$BIN/loadlab" serve --model "$s" --workers 1 --addr "127.0.0.1:$PORT") ;;
  esac
  taskset -c 0 "${cmd[@]}" >/dev/null 2>"$OUT/$s.log" &
  SPID=$!
  wait_port "$PORT" || { echo "$s did not start; see $OUT/$s.log" >&2; exit 1; }
  url="http://127.0.0.1:$PORT/500B.html"
  # Warm-up: the connections opened and buffers grown before the profile.
  taskset -c 1 "$BIN/loadlab" bench -q -k -c "$C" -t 1 --threads 1 "$url" >/dev/null
  perf record -q -F 4999 -e cpu-clock -p "$SPID" -o "$OUT/$s.data" 2>/dev/null &
  PPID_=$!
  taskset -c 1 "$BIN/loadlab" bench -q -k --rate "$RATE" -c "$C" -t "$SECS" --threads 1 \
    --format csv "$url" >"$OUT/$s.csv"
  kill -INT "$PPID_"; wait "$PPID_" || true; PPID_=
  kill -TERM "$SPID"; wait "$SPID" 2>/dev/null || true; SPID=
  # Requests answered, by the CSV's header (docs/schema/bench-csv.md), and
  # what makes CPU per request not like for like: failed or non-2xx
  # answers, or a server that fell under 97 % of the offered rate (it then
  # serves more requests per wake-up than the others). Kept in NAME.warn,
  # which profile_cmp.py prints beside the figures.
  awk -F, -v s="$s" -v rate="$RATE" -v warn="$OUT/$s.warn" '
    NR==1 { for (i = 1; i <= NF; i++) h[$i] = i }
    NR==2 {
      print $h["complete"]
      printf "" > warn
      bad = $h["failed"] + $h["non_2xx"]
      if (bad > 0) printf "%s: %d requests failed or were not 2xx: not like for like\n", s, bad > warn
      if ($h["achieved_rate"] < 0.97 * rate)
        printf "%s: answered %.0f of %d requests/s offered: it fell behind, not like for like\n", s, $h["achieved_rate"], rate > warn
    }' "$OUT/$s.csv" >"$OUT/$s.n"
  echo "$s: $(cat "$OUT/$s.n") requests profiled -> $OUT/$s.data"
  cat "$OUT/$s.warn" >&2
done
