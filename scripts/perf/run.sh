#!/usr/bin/env bash
# Performance comparison suite (issue: performance). One invocation, several
# interleaved rounds, medians, ratios from the same run; loopback only.
#
#  rows 1/2/6: every loadlab model, nginx (1 worker) and the floor responders
#              (examples/floor_server.rs, epoll; floor_uring.rs, io_uring)
#              pinned to CPU 0; wrk and loadlab
#              bench pinned to CPU 1; 500 B; c=50 (PERF_C=1000 for c=1000); keep-alive (row 1) and a
#              new connection per request (row 2).
#  row 3:      E3, 10,000 requests at c=10,000 on 500 B and 20 KB, loadlab
#              reactors vs nginx and the floor responder, 2 workers each
#              (loadlab sweep, which samples server CPU and peak RSS of the
#              whole process tree). The floor answers every path with the
#              same 500 bytes, so it has a row for 500 B only.
#              scripts/perf/e3.py judges it (issue 23 item 3): time vs
#              the floor, failed, peak RSS vs nginx, every repeat.
#  row 4:      scripts/bench-vs-wrk.sh (load generators, floor client),
#              against the floor responder, then one nginx worker
#              (ROW4_SERVERS="floor" for the first alone); every round.
#  row 5:      scripts/bench-files.sh (100 MB download/upload vs nginx).
#
# Usage: scripts/perf/run.sh [ROUNDS] [SECONDS]  (defaults 7 and 3)
#        ROWS=12 scripts/perf/run.sh ...  runs only the rows named (default 12345;
#        "1" and "2" both select the server rows 1, 2 and 6)
#        PERF_SERVERS="floor nginx async async:2" ...  rows 1/2/6 for those
#        servers only, in that order (reversed every other round); MODEL:N
#        runs a loadlab model with --workers N. Name each floor beside the
#        models it judges: a ratio's two runs are then seconds apart.
#        PERF_KA=on ...  keep-alive only (rows 1 and 6); PERF_KA=off, new
#        connections only (row 2); default both
#        PERF_PAIRED=1 ...  then each loadlab model of the run beside its
#        floor on CPU 0 at the same time, ROUNDS rounds of SECONDS, keep-
#        alive, one worker each, open loop at PERF_RATE (default 60000)
#        req/s in all, c=PERF_C (scripts/perf/pair.sh, with this run's
#        binaries): the ratios to the floors without the host's drift
#        between rounds; target/perf/paired.txt
#        PERF_RATE=20000 ...  rows 1/2/6 open loop: loadlab bench alone
#        (wrk has no fixed rate) offers this many requests/s to every
#        server, so each wake-up finds as many requests whatever the
#        server's speed, and CPU per request compares code, not how a
#        closed-loop client's pace batches them (see docs/PERFORMANCE.md).
#        Pick a rate every server measured sustains on one core; the
#        table's req/s says when one did not.
# Rows 1/2/6 judge servers by their own CPU per request (user + system
# time of the server's whole process tree, to the nanosecond) and context switches per
# request, not by CPU 0's busy time, which counts anything else the shared
# host runs there. Ratios against nginx and the floors are medians of
# per-round paired ratios, each taken between runs minutes apart at most,
# so that drift in what the host leaves this machine cancels out; they are
# printed with their range and every round's value (scripts/perf/servers.py).
# Writes the tables to stdout and to target/perf/*.txt; docs/PERFORMANCE.md
# records a run with the machine and this command.
set -euo pipefail
# The whole script is one block, read before any of it runs, so editing
# this file during a run (as someone working on it will) cannot make bash
# read the rest of it from the wrong place.
{
cd "$(dirname "$0")/../.."
. scripts/perf/lib.sh
ROUNDS=${1:-7}
SECS=${2:-3}
ROWS=${ROWS:-12345}
# Connections the clients of rows 1/2/6 hold (issues 20 and 23 ask for 50 and 1000).
CONC=${PERF_C:-50}
[[ $CONC =~ ^[1-9][0-9]*$ ]] || { echo "PERF_C: a number of connections, e.g. PERF_C=1000 (got '$CONC')" >&2; exit 2; }
# Offered requests/s (open loop), or empty for closed loop.
RATE=${PERF_RATE:-}
[[ -z $RATE || $RATE =~ ^[1-9][0-9]*$ ]] || { echo "PERF_RATE: requests per second, e.g. PERF_RATE=20000 (got '$RATE')" >&2; exit 2; }
CLIENTS=(wrk loadlab)
[ -n "$RATE" ] && CLIENTS=(loadlab)
[[ $ROWS =~ ^[1-5]+$ ]] || { echo "ROWS: row numbers 1-5, e.g. ROWS=12 (got '$ROWS')" >&2; exit 2; }
want() { [[ $ROWS == *$1* ]]; }
# PERF_KA=on: keep-alive only (rows 1 and 6); off: new connections only.
KAS=${PERF_KA:-on off}
# PERF_PAIRED=1: rows 1/6 again as simultaneous pairs with the floors.
PAIRED=${PERF_PAIRED:-0}
[[ $PAIRED == 0 || $PAIRED == 1 ]] || { echo "PERF_PAIRED: 0 or 1 (got '$PAIRED')" >&2; exit 2; }
[[ $PAIRED == 0 || $KAS == *on* ]] || { echo "PERF_PAIRED=1 pairs keep-alive runs: not with PERF_KA=off" >&2; exit 2; }
[[ $KAS == "on off" || $KAS == on || $KAS == off ]] || { echo "PERF_KA: on or off (got '$KAS')" >&2; exit 2; }
for t in nginx wrk taskset python3; do
  command -v $t >/dev/null || [ -x /usr/sbin/$t ] || { echo "missing $t"; exit 1; }
done
cargo build --release --quiet --bin loadlab --examples
OUT=${CARGO_TARGET_DIR:-target}/perf
mkdir -p "$OUT"
work=$(mktemp -d)
# The run uses its own copy of the binaries: a rebuild in this tree while
# it runs (someone working on the next change) must not swap the code
# measured between rounds.
BIN=$work/bin
mkdir -p "$BIN/examples"
cp "${CARGO_TARGET_DIR:-target}/release/loadlab" "$BIN/"
for e in floor_server floor_uring floor_client floor_upload; do
  cp "${CARGO_TARGET_DIR:-target}/release/examples/$e" "$BIN/examples/"
done
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
ulimit -n 20000
"$BIN/loadlab" serve --help >/dev/null
python3 - "$work/root" <<'PY'
import os, sys
os.makedirs(sys.argv[1], exist_ok=True)
PY
# The embedded docroot, byte for byte, for nginx.
for f in 500B.html 20KB.html index.html; do cp "assets/docroot/$f" "$work/root/$f"; done

# start_server NAME KEEPALIVE -> sets PORT, SPID
start_server() {
  local name=$1 ka=$2
  PORT=$(free_port)
  case $name in
    floor) if [ "$ka" = on ]; then taskset -c 0 "$BIN/examples/floor_server" "$PORT" >/dev/null & else taskset -c 0 "$BIN/examples/floor_server" "$PORT" close >/dev/null & fi ;;
    floor-uring) if [ "$ka" = on ]; then taskset -c 0 "$BIN/examples/floor_uring" "$PORT" >/dev/null & else taskset -c 0 "$BIN/examples/floor_uring" "$PORT" close >/dev/null & fi ;;
    nginx|nginx-nodefer)
      local deferred=deferred
      [ "$name" = nginx-nodefer ] && deferred=
      mkdir -p "$work/ng"
      cat > "$work/ng/nginx.conf" <<CONF
user root root; daemon off; worker_processes 1; worker_rlimit_nofile 20000;
pid $work/ng/nginx.pid; error_log $work/ng/error.log warn;
events { worker_connections 20000; use epoll; multi_accept on; }
http { access_log off; sendfile on; tcp_nodelay on; keepalive_requests 1000000000;
  keepalive_timeout 65; open_file_cache max=100;
  client_body_temp_path $work/ng/cb; proxy_temp_path $work/ng/p; fastcgi_temp_path $work/ng/f;
  uwsgi_temp_path $work/ng/u; scgi_temp_path $work/ng/s;
  server { listen 127.0.0.1:$PORT backlog=65535 $deferred; root $work/root; } }
CONF
      taskset -c 0 "$(command -v nginx || echo /usr/sbin/nginx)" -p "$work/ng" -c "$work/ng/nginx.conf" -e "$work/ng/error.log" & ;;
    go) GOMAXPROCS=1 taskset -c 0 "$work/go/server" "$PORT" "$work/root" >/dev/null 2>&1 & ;;
    *)
      # MODEL[:WORKERS][-nodefer]; --workers 1 unless named (thread-pool 8).
      local w=1 model=${name%-nodefer} opt=()
      [ "$model" != "$name" ] && opt=(--no-defer-accept)
      [ "$model" = thread-pool ] && w=8
      [[ $model == *:* ]] && { w=${model#*:}; model=${model%%:*}; }
      taskset -c 0 "$BIN/loadlab" serve --model "$model" --workers "$w" "${opt[@]}" --addr "127.0.0.1:$PORT" >/dev/null & ;;
  esac
  SPID=$!
  pids+=("$SPID")
  wait_port "$PORT"
}
stop_server() { kill -TERM "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true; }

# Busy and total jiffies of CPU 0 and CPU 1 (/proc/stat; idle and iowait
# are not busy): "busy0 total0 busy1 total1". Only to say which core was
# saturated (the one at 100 % sets the rate): CPU 0 also runs whatever
# else the shared host puts there, so the server's CPU per request comes
# from its own process tree (tree_usage) instead.
cpu_jiffies() { awk '/^cpu0 /{a=$2+$3+$4+$7+$8; b=a+$5+$6} /^cpu1 /{c=$2+$3+$4+$7+$8; d=c+$5+$6} END{print a, b, c, d}' /proc/stat; }

# tree_usage PID -> "cpu_ns switches": CPU time (user + system, every
# thread) and context switches of PID's whole process tree so far
# (scripts/perf/tree_usage.py says how).
tree_usage() { python3 scripts/perf/tree_usage.py "$1"; }

# client NAME KEEPALIVE -> prints "rps p99_ms requests server_cpu_pct
# client_cpu_pct server_cpu_ns server_switches": how busy CPU 0 (the
# server's) and CPU 1 (the client's) were during the run, and what the
# server's process tree used (tree_usage) from before the client started
# until it ended.
client() {
  local c=$1 ka=$2 url="http://127.0.0.1:$PORT/500B.html" o="$work/c.out"
  local j0 j1 u0 u1
  u0=$(tree_usage "$SPID")
  j0=$(cpu_jiffies)
  client_run "$c" "$ka" "$url" "$o" > "$work/c.res"
  j1=$(cpu_jiffies)
  u1=$(tree_usage "$SPID")
  echo "$(cat "$work/c.res") $(echo "$j0 $j1" | awk '{t0 = $6 - $2; t1 = $8 - $4; printf "%.0f %.0f", t0 ? 100 * ($5 - $1) / t0 : 0, t1 ? 100 * ($7 - $3) / t1 : 0}') $(echo "$u0 $u1" | awk '{print $3 - $1, $4 - $2}')"
}

client_run() {
  local c=$1 ka=$2 url=$3 o=$4
  case $c in
    wrk)
      local hdr=()
      [ "$ka" = off ] && hdr=(-H "Connection: close")
      taskset -c 1 wrk -t1 -c"$CONC" -d"${SECS}s" --latency "${hdr[@]}" "$url" > "$o" 2>&1 || true
      python3 - "$o" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
rps = re.search(r"Requests/sec:\s+([\d.]+)", t)
p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", t)
scale = {"us": 0.001, "ms": 1, "s": 1000}
n = re.search(r"(\d+) requests in", t)
print(rps.group(1) if rps else 0, float(p99.group(1)) * scale[p99.group(2)] if p99 else 0, n.group(1) if n else 0)
PY
      ;;
    loadlab)
      local k=()
      [ "$ka" = on ] && k=(-k)
      [ -n "$RATE" ] && k+=(--rate "$RATE")
      taskset -c 1 "$BIN/loadlab" bench -q "${k[@]}" -c "$CONC" -t "$SECS" --threads 1 --format csv "$url" > "$o" 2>&1 || true
      # Columns by header name (docs/schema/bench-csv.md), not position.
      awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i} NR==2{print $h["requests_per_second"], $h["p99_ms"], $h["complete"]}' "$o" ;;
  esac
}

# CPU time the hypervisor gave to other guests (steal, /proc/stat) during
# the run: on a shared host, a run with much of it is a noisy one.
steal() { awk '/^cpu /{print $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
read -r steal0 total0 < <(steal)
report_steal() {
  read -r steal1 total1 < <(steal)
  awk -v s=$((steal1 - steal0)) -v t=$((total1 - total0)) \
    'BEGIN{printf "\nSteal (CPU time the host gave to other guests) during this run: %.1f %%\n", t ? 100 * s / t : 0}'
}

# The references, then every model in the registry's order.
mapfile -t MODELS < <("$BIN/loadlab" serve --list-models | cut -f1)
# floor-uring: the io_uring floor (examples/floor_uring.rs) that io-uring's
# server CPU per request is held to (issue 20 item 6).
SERVERS=(floor floor-uring nginx "${MODELS[@]}")
# Go's net/http (examples/go/server.go) with GOMAXPROCS=1, built once here
# (issue 20: async with 1 worker against it, by server CPU per request).
if (want 1 || want 2) && command -v go >/dev/null; then
  mkdir -p "$work/go"
  (cd "$work/go" && go build -o server "$OLDPWD/examples/go/server.go") && SERVERS+=(go)
elif want 1 || want 2; then
  echo "go is not installed: no Go net/http row"
fi
# PERF_SERVERS="floor nginx async go" measures only those (floor and
# nginx are the ratios' references and must be among them).
# "async-local:2" is async-local with --workers 2.
[ -n "${PERF_SERVERS:-}" ] && read -r -a SERVERS <<< "$PERF_SERVERS"
for ref in floor nginx; do
  [[ " ${SERVERS[*]} " == *" $ref "* ]] ||
    { echo "PERF_SERVERS must include floor and nginx, the ratios' references (got '${PERF_SERVERS:-}')" >&2; exit 2; }
done
# Without keep-alive, also both servers listening without TCP_DEFER_ACCEPT
# (every other row has it on both sides), to show what it is worth.
NODEFER=(nginx-nodefer reactors-nodefer)
: > "$work/rows"
if want 1 || want 2; then
for round in $(seq 1 "$ROUNDS"); do
  for ka in $KAS; do
    extra=()
    [ "$ka" = off ] && extra=("${NODEFER[@]}")
    order=("${SERVERS[@]}" "${extra[@]}")
    # Every other round runs the servers in reverse, so a drift of the
    # host during a round (it runs for minutes) favours no server's place
    # in the order: a pair of rounds sees each server early and late.
    if (( round % 2 == 0 )); then
      rev=()
      for ((i = ${#order[@]} - 1; i >= 0; i--)); do rev+=("${order[i]}"); done
      order=("${rev[@]}")
    fi
    for s in "${order[@]}"; do
      start_server "$s" "$ka"
      for c in "${CLIENTS[@]}"; do
        echo "$round $ka $s $c $(client "$c" "$ka")" >> "$work/rows"
      done
      stop_server
    done
  done
done
# Every round's numbers, kept beside the tables (docs/PERFORMANCE.md
# records them): round, keep-alive, server, client, req/s, p99 ms,
# requests, CPU 0 %, CPU 1 %, server CPU ns, server context switches.
cp "$work/rows" "$OUT/servers-rounds.txt"
rate_opt=()
[ -n "$RATE" ] && rate_opt=(--rate "$RATE")
python3 scripts/perf/servers.py "${rate_opt[@]}" "$work/rows" "$CONC" "${SERVERS[@]}" | tee "$OUT/servers.txt"
python3 scripts/perf/servers.py --rounds "${rate_opt[@]}" "$work/rows" "$CONC" "${SERVERS[@]}" > "$OUT/servers-rounds.md"
# The raw rows too, so the tables can be made again (servers.py ROWS_FILE).
cp "$work/rows" "$OUT/servers-raw.txt"
fi

if [ "$PAIRED" = 1 ] && (want 1 || want 2); then
  # Each loadlab model of this run beside its floor at the same time: the
  # rounds above, run one after the other, move with the host by up to
  # 15 %; these by about 1 % (docs/PERFORMANCE.md, "Simultaneous pairs").
  pairs=()
  for s in "${SERVERS[@]}"; do
    [[ " ${MODELS[*]} " == *" $s "* ]] || continue
    # io-uring is held to the io_uring floor, every other model to epoll's.
    if [ "$s" = io-uring ]; then pairs+=("floor-uring:$s"); else pairs+=("floor:$s"); fi
  done
  echo; echo "Rows 1/6 paired: each model beside its floor at once, keep-alive, c=$CONC, ${RATE:-60000} req/s in all (scripts/perf/pair.sh)" | tee "$OUT/paired.txt"
  if [ ${#pairs[@]} -eq 0 ]; then
    echo "no loadlab model among the servers: nothing to pair" | tee -a "$OUT/paired.txt"
  else
    PAIR_BIN=$BIN PAIRS="${pairs[*]}" RATE=${RATE:-60000} C=$CONC scripts/perf/pair.sh "$ROUNDS" "$SECS" |
      sed -n '/^| server/,$p' | tee -a "$OUT/paired.txt"
  fi
fi

if want 3; then
echo; echo "Row 3: E3, 10,000 requests at c=10,000 (2 workers each; medians over $ROUNDS repeats)" | tee "$OUT/e3.txt"
# A warm-up run per target, unmeasured: a sweep's first 10,000-connection
# burst is slow whichever target meets it, and that was always reactors.
# Both also without TCP_DEFER_ACCEPT (the lab's targets have it on both
# sides): loadlab by its flag, nginx from the lab's config less `deferred`.
mkdir -p "$work/e3ng"
cat > "$work/e3ng/nginx.conf.in" <<CONF
user root root; daemon off; master_process on; worker_processes 2;
worker_rlimit_nofile 20000; pid $work/e3ng/nginx-@PORT@.pid; error_log $work/e3ng/error.log warn;
events { worker_connections 20000; use epoll; multi_accept on; }
http { access_log off; sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_timeout 65; keepalive_requests 1000000000; open_file_cache max=1000 inactive=20s;
  client_body_temp_path $work/e3ng/cb; proxy_temp_path $work/e3ng/p; fastcgi_temp_path $work/e3ng/f;
  uwsgi_temp_path $work/e3ng/u; scgi_temp_path $work/e3ng/s;
  server { listen 127.0.0.1:@PORT@ backlog=65535; root $work/root; } }
CONF
NGINX_BIN=$(command -v nginx || echo /usr/sbin/nginx)
"$BIN/loadlab" sweep -q -T model:reactors:workers=2 -T nginx:workers=2 \
  -T "cmd:$BIN/loadlab serve --model reactors --workers 2 --no-defer-accept --addr 127.0.0.1:{port}" \
  -T "cmd:sh -c 'sed s/@PORT@/{port}/g $work/e3ng/nginx.conf.in > $work/e3ng/{port}.conf && exec $NGINX_BIN -p $work/e3ng -c $work/e3ng/{port}.conf'" \
  -T "cmd:$BIN/examples/floor_server {port} close 2" \
  --concurrency 10000 --requests 10000 --path /500B.html,/20KB.html --repeat "$ROUNDS" --warmup-runs 1 --out "$work/e3" > /dev/null
cp "$work/e3/raw.csv" "$OUT/e3-raw.csv"
python3 scripts/perf/e3.py "$work/e3/raw.csv" | tee -a "$OUT/e3.txt"
fi

if want 4; then
echo; echo "Row 4: load generators (scripts/bench-vs-wrk.sh)" | tee "$OUT/clients.txt"
# Against the floor responder first (issue 23 item 4 judges client CPU
# there: a server that keeps up leaves the rate to the client), then
# against one nginx worker. ROW4_SERVERS="floor" runs the first alone.
for server in ${ROW4_SERVERS:-floor nginx}; do
  echo "SERVER=$server" | tee -a "$OUT/clients.txt"
  SERVER=$server scripts/bench-vs-wrk.sh "$ROUNDS" "$SECS" | tee -a "$OUT/clients.txt"
done
fi
if want 5 && [ -x scripts/bench-files.sh ]; then
  echo; echo "Row 5: files (scripts/bench-files.sh)" | tee "$OUT/files.txt"
  scripts/bench-files.sh | tee -a "$OUT/files.txt"
fi
report_steal | tee "$OUT/steal.txt"
exit
}
