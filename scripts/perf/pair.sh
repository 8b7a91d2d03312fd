#!/usr/bin/env bash
# Simultaneous pairs: each server beside its reference on the same core at
# the same time, so that what the shared host takes from this VM falls on
# both alike. Server CPU per request of each, and their ratio, per round.
#
# Usage: scripts/perf/pair.sh [ROUNDS] [SECONDS]   (defaults 9 and 4)
#   PAIRS  "REF:SERVER ..." (default: the three pairs issues 20 and 23
#          set targets for); REF and SERVER are floor, floor-uring or a
#          loadlab model (--workers 1), or MODEL@BINARY for that model of
#          another loadlab build, to pair a change against the code before
#          it, e.g. PAIRS="io-uring@/tmp/before/loadlab:io-uring" (likewise
#          floor@BINARY and floor-uring@BINARY for another floor build)
#   RATE   requests/s offered in all, half to each server (default 60000);
#          C connections to each (default 1000)
#   KEEPALIVE  on (default) or off: off opens a connection per request
#          (use a lower RATE, e.g. 10000, and C=50)
#   PAIR_BIN  a directory laid out as target/release whose binaries are
#          measured unbuilt (default: build, then target/release)
#
# Why: run one after the other (scripts/perf/run.sh), the same server's CPU
# per request moves by up to 15 % between rounds a minute apart on this
# shared host, so a 1.1 x target needs dozens of rounds and still lands
# within its interval. Run at once, two copies of the same binary measured
# 1.004, 1.003 and 0.999 in three rounds. What differs from run.sh: each
# server has the core about half the time and shares its caches with the
# other, as servers on a busy machine do.
#
# Both servers on CPU 0, their two loadlab bench clients (open loop, keep-
# alive, /500B.html) on CPU 1, all on 127.0.0.1; each run is bounded by
# SECONDS and stops by itself. Writes every round to stdout and to
# target/perf/pair.txt, then each pair's median ratio with its interval
# (scripts/perf/pair_table.py).
set -euo pipefail
ROUNDS=${1:-9}
SECS=${2:-4}
# model subset: issues 20 and 23 hold these three to their floors.
PAIRS=${PAIRS:-floor:event-loop floor:reactors floor-uring:io-uring}
RATE=${RATE:-60000}
C=${C:-1000}
KEEPALIVE=${KEEPALIVE:-on}
case $KEEPALIVE in on) KA=-k ;; off) KA= ;; *) echo "KEEPALIVE must be on or off (got '$KEEPALIVE')" >&2; exit 2 ;; esac
for v in ROUNDS SECS RATE C; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive number (got '${!v}')" >&2; exit 2; }
done
# Checked, and MODEL@BINARY paths made absolute, before the cd below: a
# relative one is the caller's.
checked=()
for p in $PAIRS; do
  [[ $p == *:* ]] || { echo "PAIRS: REF:SERVER pairs, e.g. floor:event-loop (got '$p')" >&2; exit 2; }
  sides=()
  for side in "${p%%:*}" "${p#*:}"; do
    if [[ $side == *@* ]]; then
      [[ -f ${side#*@} && -x ${side#*@} ]] || { echo "PAIRS: ${side#*@} is not an executable (in '$p')" >&2; exit 2; }
      # A floor's build must be that floor: a label naming one server for
      # another's numbers would be a wrong table.
      case ${side%%@*}:$(basename "${side#*@}") in
        floor:floor_server | floor-uring:floor_uring) ;;
        floor:* | floor-uring:*) echo "PAIRS: ${side%%@*}@ needs a ${side%%@*} build, not ${side#*@} (in '$p')" >&2; exit 2 ;;
      esac
      [[ ${side#*@} == /* ]] || side="${side%%@*}@$PWD/${side#*@}"
    fi
    sides+=("$side")
  done
  checked+=("${sides[0]}:${sides[1]}")
done
PAIRS="${checked[*]}"
cd "$(dirname "$0")/../.."
. scripts/perf/lib.sh
# PAIR_BIN: a directory laid out as target/release (loadlab, examples/)
# whose binaries are measured as they are, unbuilt (run.sh passes its own
# copy, so its pairs measure the code of its rows).
SRC=${PAIR_BIN:-}
if [ -z "$SRC" ]; then
  cargo build --release --quiet --bin loadlab --example floor_server --example floor_uring
  SRC=${CARGO_TARGET_DIR:-target}/release
fi
for b in loadlab examples/floor_server examples/floor_uring; do
  [ -x "$SRC/$b" ] || { echo "PAIR_BIN: no executable $SRC/$b (a directory laid out as target/release)" >&2; exit 2; }
done
OUT=${CARGO_TARGET_DIR:-target}/perf
mkdir -p "$OUT"
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
# Its own copy of the binaries, so a rebuild during the run changes nothing;
# each MODEL@BINARY's too.
BIN=$work/bin
mkdir -p "$BIN"
cp "$SRC/loadlab" "$SRC/examples/floor_server" "$SRC/examples/floor_uring" "$BIN/"
declare -A COPY=()
for p in $PAIRS; do
  for side in "${p%%:*}" "${p#*:}"; do
    if [[ $side == *@* && -z ${COPY[${side#*@}]:-} ]]; then
      COPY[${side#*@}]=$BIN/at${#COPY[@]}
      cp "${side#*@}" "${COPY[${side#*@}]}"
    fi
  done
done
ulimit -n 20000

# serve NAME PORT: starts it on CPU 0 and records its pid in SPID.
serve() {
  case $1 in
    floor) taskset -c 0 "$BIN/floor_server" "$2" >/dev/null & ;;
    floor-uring) taskset -c 0 "$BIN/floor_uring" "$2" >/dev/null & ;;
    floor@* | floor-uring@*) taskset -c 0 "${COPY[${1#*@}]}" "$2" >/dev/null & ;;
    *@*) taskset -c 0 "${COPY[${1#*@}]}" serve --model "${1%%@*}" --workers 1 --addr "127.0.0.1:$2" >/dev/null & ;;
    *) taskset -c 0 "$BIN/loadlab" serve --model "$1" --workers 1 --addr "127.0.0.1:$2" >/dev/null & ;;
  esac
  SPID=$!
  pids+=("$SPID")
}
# load PORT SECS CSV: this server's half of the offered rate.
load() {
  taskset -c 1 "$BIN/loadlab" bench -q $KA --rate $((RATE / 2)) -c "$C" -t "$2" --threads 1 \
    --format csv "http://127.0.0.1:$1/500B.html" >"$3" 2>&1 || true
}
# Requests answered, failed or not 2xx, and the rate achieved, by the CSV's
# header names (docs/schema/bench-csv.md).
answered() { awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i} NR==2{print $h["complete"], $h["failed"] + $h["non_2xx"], $h["achieved_rate"]}' "$1"; }

echo "# pair round ref server ref_ns server_ns ratio ref_requests server_requests bad achieved_rate_min" | tee "$OUT/pair.txt"
for ((r = 1; r <= ROUNDS; r++)); do
  # Each round in another order, and each pair's two servers started in
  # turn, so neither always comes first.
  order=($PAIRS)
  ((r % 2 == 0)) && order=($(printf '%s\n' "${order[@]}" | tac))
  for p in "${order[@]}"; do
    ref=${p%%:*} srv=${p#*:}
    PR=$(free_port)
    PS=$(free_port)
    if ((r % 2)); then serve "$ref" "$PR"; RP=$SPID; serve "$srv" "$PS"; SP=$SPID
    else serve "$srv" "$PS"; SP=$SPID; serve "$ref" "$PR"; RP=$SPID; fi
    wait_port "$PR" && wait_port "$PS" || { echo "a server of $p did not start" >&2; exit 1; }
    # Warm-up: both servers' connections opened before the measured part.
    load "$PR" 1 /dev/null & l1=$!
    load "$PS" 1 /dev/null & l2=$!
    wait "$l1" "$l2"
    r0=$(python3 scripts/perf/tree_usage.py "$RP")
    s0=$(python3 scripts/perf/tree_usage.py "$SP")
    load "$PR" "$SECS" "$work/r.csv" & l1=$!
    load "$PS" "$SECS" "$work/s.csv" & l2=$!
    wait "$l1" "$l2"
    r1=$(python3 scripts/perf/tree_usage.py "$RP")
    s1=$(python3 scripts/perf/tree_usage.py "$SP")
    kill -TERM "$RP" "$SP" 2>/dev/null || true
    wait "$RP" "$SP" 2>/dev/null || true
    read -r rn rbad rrate < <(answered "$work/r.csv")
    read -r sn sbad srate < <(answered "$work/s.csv")
    echo "$p $r $ref $srv ${r0% *} ${r1% *} ${s0% *} ${s1% *} $rn $sn $((rbad + sbad)) $rrate $srate" |
      awk '{ rns = ($6 - $5) / $9; sns = ($8 - $7) / $10; rate = $12 < $13 ? $12 : $13
             printf "%s %d %s %s %.1f %.1f %.4f %d %d %d %.0f\n", $1, $2, $3, $4, rns, sns, sns / rns, $9, $10, $11, rate }' |
      tee -a "$OUT/pair.txt"
  done
done
python3 scripts/perf/pair_table.py "$OUT/pair.txt" "$RATE"
