#!/usr/bin/env bash
# User-space instructions per keep-alive request, per server, under callgrind.
#
# Usage: scripts/perf/instructions.sh [REQUESTS] [SERVER...]
#   REQUESTS  keep-alive requests measured per server (default 20000)
#   SERVER    floor, floor-uring, or any loadlab model; default: the two
#             floors and the three models issues 20 and 23 judge against them
#   CALLGRIND_OPTS  more callgrind options, split on spaces (e.g.
#             --dump-instr=yes, for costs per instruction with KEEP=DIR)
#   RATE=N    loadlab bench offers N requests/s (open loop) instead of
#             as fast as the server answers: under callgrind the server
#             then sees one request a round, as it does at low load at full
#             speed, so what each round costs counts (c = 50 at 30,000/s
#             is one a round at full speed; unlimited, callgrind's slow
#             server finds ~30 in each). CLIENT=bench only.
#   KA=off    a new connection per request (accept, request, close: what
#             row 2 and E3 pay per connection) instead of keep-alive
#   CLIENT=wrk  measure with wrk's requests (HTTP/1.1, a Host field only,
#             as rows 1 and 6 judge with) instead of loadlab bench's
#             (HTTP/1.0, Keep-Alive and three more fields): wrk runs
#             for WRK_SECS (default 4) seconds and REQUESTS is what it
#             reports answered (the at most 50 it has in flight when it
#             stops are counted in the instructions but not in REQUESTS:
#             under 0.5 % of the ~10,000 a run makes under callgrind)
#
# Why instructions: CPU time per request drifts with what else the host runs;
# callgrind's instruction count does not, so a change to the request path can
# be judged on a shared host. Only user space is counted (the kernel's share,
# most of a request on loopback, is invisible here).
#
# Each server runs under callgrind with --workers 1 on 127.0.0.1; 2,000
# warm-up requests (connections opened, buffers grown), then the counters
# are zeroed, REQUESTS requests to /500B.html are sent with `loadlab bench -k
# -c 50` (its default header fields), and the counters dumped. Prints one line per server:
# name, instructions, requests, instructions per request.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/perf/lib.sh

N=${1:-20000}
shift || true
SERVERS=("$@")
# model subset: the models issues 20 and 23 hold to the floors' cost.
[ ${#SERVERS[@]} -gt 0 ] || SERVERS=(floor floor-uring io-uring event-loop reactors)
case "$N" in '' | *[!0-9]*) echo "REQUESTS must be a number (got '$N')" >&2; exit 2 ;; esac
RATE_ARGS=()
if [ -n "${RATE:-}" ]; then
  case "$RATE" in *[!0-9]* | 0*) echo "RATE must be a positive number (got '$RATE')" >&2; exit 2 ;; esac
  RATE_ARGS=(--rate "$RATE")
fi
KA=${KA:-on}
CLIENT=${CLIENT:-bench}
case "$CLIENT" in
  bench) ;;
  wrk)
    [ "$KA" = on ] || { echo "CLIENT=wrk measures keep-alive only" >&2; exit 2; }
    [ -z "${RATE:-}" ] || { echo "RATE is for CLIENT=bench (wrk has no rate)" >&2; exit 2; }
    command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 2; } ;;
  *) echo "CLIENT must be bench or wrk (got '$CLIENT')" >&2; exit 2 ;;
esac
case "$KA" in on) KEEP_ALIVE=(-k) CLOSE=() ;; off) KEEP_ALIVE=() CLOSE=(close) ;; *) echo "KA must be on or off (got '$KA')" >&2; exit 2 ;; esac
for tool in valgrind callgrind_control; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed" >&2; exit 2; }
done

BIN=target/release
cargo build --release --quiet --bin loadlab --example floor_server --example floor_uring

work=$(mktemp -d)
SPID=
cleanup() {
  if [ -n "$SPID" ]; then kill -9 "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

bench() { "$BIN/loadlab" bench -q -S "${KEEP_ALIVE[@]}" -c "${2:-50}" -n "$1" "${@:3}" "http://127.0.0.1:$PORT/500B.html" >/dev/null; }

# callgrind_control's command is only read when the server runs: one that
# waits in epoll_wait or io_uring_enter is woken by a single request (a
# few thousand instructions against the millions measured).
control() {
  callgrind_control "$1" "$SPID" >/dev/null 2>&1 &
  local c=$! i
  for i in $(seq 50); do
    sleep 0.2
    kill -0 "$c" 2>/dev/null || break
    bench 1 1
  done
  wait "$c" || { echo "$s: callgrind_control $1 failed" >&2; exit 1; }
}

printf '%-12s %14s %9s %10s\n' server instructions requests "instr/req"
for s in "${SERVERS[@]}"; do
  PORT=$(free_port)
  case "$s" in
    floor) cmd=("$BIN/examples/floor_server" "$PORT" "${CLOSE[@]}") ;;
    floor-uring) cmd=("$BIN/examples/floor_uring" "$PORT" "${CLOSE[@]}") ;;
    *) cmd=("$BIN/loadlab" serve --model "$s" --workers 1 --addr "127.0.0.1:$PORT") ;;
  esac
  out="$work/$s.out"
  valgrind --tool=callgrind --compress-strings=no --compress-pos=no ${CALLGRIND_OPTS:-} --callgrind-out-file="$out.%p" "${cmd[@]}" >/dev/null 2>"$work/$s.log" &
  SPID=$!
  # Under callgrind a server takes seconds to start: up to 60 s.
  wait_port "$PORT" 60 || { echo "$s did not start; see its log:" >&2; cat "$work/$s.log" >&2; exit 1; }
  bench 2000
  control -z
  if [ "$CLIENT" = wrk ]; then
    N=$(wrk -t1 -c50 -d"${WRK_SECS:-4}" "http://127.0.0.1:$PORT/500B.html" | awk '/requests in/ {print $1}')
    [ "${N:-0}" -gt 0 ] || { echo "$s: wrk made no request" >&2; exit 1; }
  else
    bench "$N" 50 "${RATE_ARGS[@]}"
  fi
  control -d
  # SIGKILL: the counts are dumped already, and a server waiting in
  # io_uring_enter under valgrind does not act on SIGTERM.
  kill -9 "$SPID"; wait "$SPID" 2>/dev/null || true; SPID=
  # The dump taken after the zeroing holds only the measured requests: it is
  # the one with the ".1" part number (threads each get their own "-NN").
  total=$(cat "$out".*.1* 2>/dev/null | awk '/^totals:/ {s += $2} END {print s + 0}')
  [ "$total" -gt 0 ] || { echo "$s: no callgrind dump found" >&2; ls "$work" >&2; exit 1; }
  printf '%-12s %14d %9d %10.0f\n' "$s" "$total" "$N" "$(echo "$total / $N" | bc -l)"
  # KEEP=DIR keeps each server's dump there, for callgrind_annotate.
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cat "$out".*.1* >"$KEEP/$s.callgrind"; fi
  rm -f "$out".*
done
