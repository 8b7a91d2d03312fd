#!/usr/bin/env bash
# File service speed, measured with curl on loopback (issue 4):
#   1. upload a 100 MiB file to loadlab serve (upload dir on disk, and on
#      tmpfs to separate the cost of fsync from the rest) and, in the same
#      rounds, to the floor receiver (examples/floor_upload.rs: read, write,
#      fsync, no digest), whose time is what any server pays,
#   2. download it from loadlab serve and, in the same rounds, from nginx
#      (generated config: one worker, sendfile on, access_log off),
#   3. a 1 GiB upload's effect on the server's memory (VmHWM/VmRSS).
# Downloads and uploads run as two phases (background writeback after an
# upload would otherwise slow whichever download came next); within a phase
# the cases alternate and the order rotates each round. Round 0 is a
# discarded warm-up; medians, means and ratios are printed at the end.
#
# Uploads do not ask for the SHA-256 (RFC 9530 Want-Repr-Digest), so the
# server does not compute it; up_tmpfs_digest asks, and sha_bound times
# openssl's SHA-256 (or sha256sum) over the same bytes (from the page cache) in the same rounds:
# what hashing alone allows.
#
# Environment: ROUNDS (15), SIZE_MB (100, MiB), MODEL (event-loop),
# WORKERS (the model's default),
# LOADLAB (target/release/loadlab), FLOOR (target/release/examples/
# floor_upload), NGINX (/usr/sbin/nginx),
# RSS_MODELS (every model, from `loadlab serve --list-models`; empty skips
# step 3),
# TMPFS_DIR (/dev/shm; empty skips the tmpfs upload),
# CASES (empty: every case; else the cases to time, e.g.
# CASES="up_tmpfs up_floor_tmpfs" for the upload target alone),
# BEFORE (another loadlab binary: adds up_tmpfs_before, the same upload
# to it in the same rounds, for a paired before/after ratio).
set -euo pipefail

ROUNDS=${ROUNDS:-15}
SIZE_MB=${SIZE_MB:-100}
MODEL=${MODEL:-event-loop}
LOADLAB=${LOADLAB:-target/release/loadlab}
FLOOR=${FLOOR:-target/release/examples/floor_upload}
NGINX=${NGINX:-/usr/sbin/nginx}
TMPFS_DIR=${TMPFS_DIR-/dev/shm}
CASES=${CASES:-}
BEFORE=${BEFORE:-}

[ -x "$LOADLAB" ] || { echo "bench-files: $LOADLAB not built (cargo build --release)" >&2; exit 2; }
RSS_MODELS=${RSS_MODELS-$("$LOADLAB" serve --list-models | cut -f1)}
[ -x "$FLOOR" ] || { echo "bench-files: $FLOOR not built (cargo build --release --examples)" >&2; exit 2; }
[ -x "$NGINX" ] || { echo "bench-files: nginx not found at $NGINX" >&2; exit 2; }
command -v curl >/dev/null || { echo "bench-files: curl is not installed" >&2; exit 2; }

work=$(mktemp -d /tmp/bench-files.XXXXXX)
shm=""
[ -n "$TMPFS_DIR" ] && shm=$(mktemp -d "$TMPFS_DIR/bench-files.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
    [ -n "$shm" ] && rm -rf "$shm"
}
trap cleanup EXIT
chmod 755 "$work"

# Starts a server that prints `listening on http://127.0.0.1:PORT`; sets
# PORT and LAST_PID.
start_server() { # log command...
    local log=$1
    shift
    # Made here, not by the child's redirection: the loop below may read
    # it before the child has run at all (seen on a busy host).
    : >"$log"
    "$@" >"$log" 2>&1 &
    LAST_PID=$!
    pids+=("$LAST_PID")
    for _ in $(seq 100); do
        PORT=$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log")
        [ -n "$PORT" ] && return 0
        sleep 0.05
    done
    echo "bench-files: $1 did not start: $(cat "$log")" >&2
    exit 1
}
WORKERS=${WORKERS:-}
start_loadlab() { # model files_dir log
    start_server "$3" "$LOADLAB" serve --model "$1" --addr 127.0.0.1:0 --files "$2" ${WORKERS:+--workers "$WORKERS"}
}

size=$((SIZE_MB * 1024 * 1024))
echo "generating a ${SIZE_MB} MiB random file"
head -c "$size" /dev/urandom >"$work/src.bin"
want=$(sha256sum "$work/src.bin" | cut -d' ' -f1)

mkdir -p "$work/files" "$work/www" "$work/nginx"
chmod 755 "$work/www"
cp "$work/src.bin" "$work/files/file.bin"
cp "$work/src.bin" "$work/www/file.bin"
chmod 644 "$work/www/file.bin"

start_loadlab "$MODEL" "$work/files" "$work/loadlab.out"
LL=$PORT
LLPID=$LAST_PID
mkdir -p "$work/floor"
start_server "$work/floor.out" "$FLOOR" "$work/floor"
FL=$PORT
FLPID=$LAST_PID
if [ -n "$shm" ]; then
    start_loadlab "$MODEL" "$shm" "$work/loadlab-shm.out"
    LLSHM=$PORT
    LLSHMPID=$LAST_PID
    mkdir -p "$shm/floor"
    start_server "$work/floor-shm.out" "$FLOOR" "$shm/floor"
    FLSHM=$PORT
    FLSHMPID=$LAST_PID
    if [ -n "$BEFORE" ]; then
        [ -x "$BEFORE" ] || { echo "bench-files: BEFORE=$BEFORE is not an executable" >&2; exit 2; }
        mkdir -p "$shm/before"
        start_server "$work/before-shm.out" "$BEFORE" serve --model "$MODEL" --addr 127.0.0.1:0 --files "$shm/before" ${WORKERS:+--workers "$WORKERS"}
        BESHM=$PORT
        BESHMPID=$LAST_PID
    fi
fi

# nginx on a free loopback port: pick one, try, retry on a clash.
nginx_started=""
for _ in $(seq 20); do
    NG=$((20000 + RANDOM % 40000))
    ss -Htln "sport = :$NG" | grep -q . && continue
    cat >"$work/nginx/nginx.conf" <<EOF
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    server {
        listen 127.0.0.1:$NG;
        root $work/www;
    }
}
EOF
    "$NGINX" -c "$work/nginx/nginx.conf" -p "$work/nginx" -g 'daemon off;' 2>>"$work/nginx/stderr" &
    ngpid=$!
    for _ in $(seq 50); do
        if curl -sf -o /dev/null "http://127.0.0.1:$NG/file.bin" -r 0-0; then
            nginx_started=1
            break
        fi
        kill -0 "$ngpid" 2>/dev/null || break
        sleep 0.05
    done
    if [ -n "$nginx_started" ]; then
        pids+=("$ngpid")
        break
    fi
    kill "$ngpid" 2>/dev/null || true
    wait "$ngpid" 2>/dev/null || true
done
[ -n "$nginx_started" ] || { echo "bench-files: nginx did not start: $(cat "$work/nginx/stderr" "$work/nginx/error.log" 2>/dev/null)" >&2; exit 1; }

# Correctness first, outside the timings.
for url in "http://127.0.0.1:$LL/files/file.bin" "http://127.0.0.1:$NG/file.bin"; do
    got=$(curl -sf "$url" | sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] || { echo "bench-files: $url returned different bytes" >&2; exit 1; }
done
up_answer=$(curl -sf -H 'Want-Repr-Digest: sha-256=1' -T "$work/src.bin" "http://127.0.0.1:$LL/files/up.bin")
case "$up_answer" in *"$want"*) ;; *) echo "bench-files: upload digest mismatch: $up_answer" >&2; exit 1 ;; esac
[ "$(sha256sum "$work/files/up.bin" | cut -d' ' -f1)" = "$want" ] || { echo "bench-files: loadlab stored different bytes" >&2; exit 1; }
curl -sf -o /dev/null -T "$work/src.bin" "http://127.0.0.1:$FL/up.bin"
[ "$(sha256sum "$work/floor/upload.bin" | cut -d' ' -f1)" = "$want" ] || { echo "bench-files: the floor receiver stored different bytes" >&2; exit 1; }

# One timed transfer; prints seconds.
t_up() { curl -sf -o /dev/null -T "$work/src.bin" -w '%{time_total}\n' "$@"; }
# The SHA-256 bound: openssl uses the CPU's SHA extensions as the sha2
# crate does (coreutils' sha256sum does not, and is 3-4 x slower here).
if command -v openssl >/dev/null; then sha_tool=(openssl dgst -sha256); else sha_tool=(sha256sum); fi
t_sha() { local t0 t1; t0=$(date +%s.%N); "${sha_tool[@]}" "$work/src.bin" >/dev/null; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}'; }
t_down() { curl -sf -o /dev/null -w '%{time_total}\n' "$1"; }

declare -A runs=()
downloads=(down_loadlab down_nginx)
uploads=(up_disk up_floor_disk)
[ -n "$shm" ] && uploads+=(up_tmpfs up_floor_tmpfs up_tmpfs_digest sha_bound)
[ -n "$shm" ] && [ -n "$BEFORE" ] && uploads+=(up_tmpfs_before)
# CASES keeps a subset, in the order above; a name that is no case is an error.
if [ -n "$CASES" ]; then
    for c in $CASES; do
        case " ${downloads[*]} ${uploads[*]} " in *" $c "*) ;; *)
            echo "bench-files: CASES: no case '$c' (cases: ${downloads[*]} ${uploads[*]})" >&2
            exit 2
            ;;
        esac
    done
    only() { local c; for c in "$@"; do case " $CASES " in *" $c "*) echo "$c" ;; esac; done; }
    mapfile -t downloads < <(only "${downloads[@]}")
    mapfile -t uploads < <(only "${uploads[@]}")
fi
cases=("${downloads[@]}" "${uploads[@]}")
has() { case " ${cases[*]} " in *" $1 "*) ;; *) return 1 ;; esac; }
run_case() {
    case "$1" in
        up_disk) t_up "http://127.0.0.1:$LL/files/up.bin" ;;
        up_tmpfs) t_up "http://127.0.0.1:$LLSHM/files/up.bin" ;;
        up_tmpfs_before) t_up "http://127.0.0.1:$BESHM/files/up.bin" ;;
        up_tmpfs_digest) t_up "http://127.0.0.1:$LLSHM/files/up.bin" -H 'Want-Repr-Digest: sha-256=1' ;;
        sha_bound) t_sha ;;
        up_floor_disk) t_up "http://127.0.0.1:$FL/up.bin" ;;
        up_floor_tmpfs) t_up "http://127.0.0.1:$FLSHM/up.bin" ;;
        down_loadlab) t_down "http://127.0.0.1:$LL/files/file.bin" ;;
        down_nginx) t_down "http://127.0.0.1:$NG/file.bin" ;;
    esac
}
# The server a case runs against, for its CPU time (none for sha_bound,
# nor for nginx, whose work is done by a worker process of its master).
server_of() {
    case "$1" in
        up_disk | down_loadlab) echo "$LLPID" ;;
        up_tmpfs | up_tmpfs_digest) echo "$LLSHMPID" ;;
        up_tmpfs_before) echo "$BESHMPID" ;;
        up_floor_disk) echo "$FLPID" ;;
        up_floor_tmpfs) echo "$FLSHMPID" ;;
        *) echo "" ;;
    esac
}
# CPU time (ns) of a process's threads so far, from /proc (schedstat):
# on a shared host the server's CPU per upload drifts less than its time.
cpu_ns() { [ -n "$1" ] && cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {print s + 0}' || echo 0; }
declare -A cpus=()
phase() { # case...
    [ $# -gt 0 ] || return 0
    local n=$# r i c t p c0 c1
    local list=("$@")
    for r in $(seq 0 "$ROUNDS"); do
        for i in $(seq 0 $((n - 1))); do
            c=${list[$(((i + r) % n))]}
            p=$(server_of "$c")
            c0=$(cpu_ns "$p")
            t=$(run_case "$c")
            c1=$(cpu_ns "$p")
            [ "$r" -gt 0 ] && runs[$c]="${runs[$c]:-} $t"
            [ "$r" -gt 0 ] && cpus[$c]="${cpus[$c]:-} $(((c1 - c0) / 1000))"
        done
    done
}
echo "running $ROUNDS rounds (+1 warm-up) of: ${downloads[*]}, then of: ${uploads[*]}"
phase "${downloads[@]}"
sync
phase "${uploads[@]}"

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mean() { tr ' ' '\n' | grep . | awk '{s+=$1} END {print s/NR}'; }
mbps() { awk -v s="$size" -v t="$1" 'BEGIN {printf "%.0f", s / t / 1e6}'; }

echo
echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -1), kernel $(uname -r)"
echo "file: $size bytes; loadlab model: $MODEL${WORKERS:+, $WORKERS workers}; rounds: $ROUNDS; MB = 10^6 bytes"
printf '%-14s %10s %12s %10s %10s %10s %14s\n' case "median s" "median MB/s" "mean s" "min s" "max s" "server CPU ms"
declare -A med=() avg=()
for c in "${cases[@]}"; do
    m=$(echo "${runs[$c]}" | median)
    med[$c]=$m
    avg[$c]=$(echo "${runs[$c]}" | mean)
    mn=$(echo "${runs[$c]}" | tr ' ' '\n' | grep . | sort -g | head -1)
    mx=$(echo "${runs[$c]}" | tr ' ' '\n' | grep . | sort -g | tail -1)
    cpu=-
    [ -n "$(server_of "$c")" ] && cpu=$(echo "${cpus[$c]}" | median | awk '{printf "%.1f", $1 / 1000}')
    printf '%-14s %10.4f %12s %10.4f %10.4f %10.4f %14s\n' "$c" "$m" "$(mbps "$m")" "${avg[$c]}" "$mn" "$mx" "$cpu"
done
if has down_loadlab && has down_nginx; then
    ratio=$(awk -v a="${med[down_loadlab]}" -v b="${med[down_nginx]}" 'BEGIN {printf "%.3f", b / a}')
    ratio_mean=$(awk -v a="${avg[down_loadlab]}" -v b="${avg[down_nginx]}" 'BEGIN {printf "%.3f", b / a}')
    echo "download loadlab / nginx throughput: $ratio (medians), $ratio_mean (means); target >= 0.95"
fi
# Upload against the floor: medians of per-round ratios, since the two
# ran seconds apart in every round and the host's share drifts between
# rounds more than within one.
floor_ratio() { # loadlab_case floor_case
    local a b
    read -ra a <<<"${runs[$1]}"
    read -ra b <<<"${runs[$2]}"
    for i in "${!a[@]}"; do awk -v x="${a[$i]}" -v y="${b[$i]}" 'BEGIN {print y / x}'; done | median |
        awk '{printf "%.3f", $1}'
}
# Every round's ratio, in round order, after the median.
rounds() { # loadlab_case floor_case
    local a b
    read -ra a <<<"${runs[$1]}"
    read -ra b <<<"${runs[$2]}"
    for i in "${!a[@]}"; do awk -v x="${a[$i]}" -v y="${b[$i]}" 'BEGIN {printf " %.3f", y / x}'; done
}
# Server CPU of one case over another's: median of per-round ratios, then
# every round's (lower is cheaper).
cpu_ratio() { # case over_case
    local a b
    read -ra a <<<"${cpus[$1]}"
    read -ra b <<<"${cpus[$2]}"
    printf '%s; per round:' "$(for i in "${!a[@]}"; do awk -v x="${a[$i]}" -v y="${b[$i]}" 'BEGIN {print x / y}'; done | median | awk '{printf "%.3f", $1}')"
    for i in "${!a[@]}"; do awk -v x="${a[$i]}" -v y="${b[$i]}" 'BEGIN {printf " %.3f", x / y}'; done
}
if has up_disk && has up_floor_disk; then
    echo "upload to disk: $(mbps "${med[up_disk]}") MB/s (target >= 1000); floor, no digest: $(mbps "${med[up_floor_disk]}") MB/s; loadlab / floor: $(floor_ratio up_disk up_floor_disk)"
    echo "  per round:$(rounds up_disk up_floor_disk)"
fi
if has up_tmpfs && has up_floor_tmpfs; then
    echo "upload to tmpfs: $(mbps "${med[up_tmpfs]}") MB/s; floor, no digest: $(mbps "${med[up_floor_tmpfs]}") MB/s; loadlab / floor: $(floor_ratio up_tmpfs up_floor_tmpfs) (target >= 0.9)"
    echo "  per round:$(rounds up_tmpfs up_floor_tmpfs)"
    echo "  server CPU per upload, loadlab / floor: $(cpu_ratio up_tmpfs up_floor_tmpfs)"
fi
if has up_tmpfs_before && has up_floor_tmpfs; then
    echo "upload to tmpfs, BEFORE binary: $(mbps "${med[up_tmpfs_before]}") MB/s; before / floor: $(floor_ratio up_tmpfs_before up_floor_tmpfs); after / before: $(floor_ratio up_tmpfs up_tmpfs_before)"
    echo "  after / before per round:$(rounds up_tmpfs up_tmpfs_before)"
    echo "  server CPU per upload, after / before: $(cpu_ratio up_tmpfs up_tmpfs_before)"
fi
if has up_tmpfs_digest && has sha_bound && has up_tmpfs; then
    echo "upload to tmpfs with the digest asked: $(mbps "${med[up_tmpfs_digest]}") MB/s; SHA-256 alone (${sha_tool[*]}, page cache): $(mbps "${med[sha_bound]}") MB/s; asked / not asked: $(floor_ratio up_tmpfs_digest up_tmpfs)"
fi

# Memory during a 1 GiB upload: the body is streamed, so the peak RSS of
# the server's processes must not move by more than a few MiB.
tree_kib() { # pid field -> sum of the field over the process and its children
    local total=0 p
    for p in "$1" $(cat /proc/"$1"/task/*/children 2>/dev/null); do
        v=$(awk -v f="$2:" '$1 == f {print $2}' /proc/"$p"/status 2>/dev/null || true)
        total=$((total + ${v:-0}))
    done
    echo "$total"
}
if [ -n "$RSS_MODELS" ]; then
    truncate -s 1G "$work/zero.bin"
    echo
    echo "1 GiB upload (Content-Length, upload dir on disk), server memory in KiB (all processes):"
    printf '%-16s %10s %10s %10s %10s %10s\n' model "HWM before" "HWM after" "HWM delta" "RSS after" "upload s"
    for m in $RSS_MODELS; do
        mkdir -p "$work/rss-$m"
        start_loadlab "$m" "$work/rss-$m" "$work/rss-$m.out"
        pid=$LAST_PID
        curl -sf -o /dev/null "http://127.0.0.1:$PORT/files/"     # touch every code path once
        curl -sf -o /dev/null -T "$work/src.bin" "http://127.0.0.1:$PORT/files/warm.bin"
        before=$(tree_kib "$pid" VmHWM)
        t=$(curl -sf -o /dev/null -T "$work/zero.bin" -w '%{time_total}' "http://127.0.0.1:$PORT/files/big.bin")
        after=$(tree_kib "$pid" VmHWM)
        rss=$(tree_kib "$pid" VmRSS)
        printf '%-16s %10s %10s %10s %10s %10s\n' "$m" "$before" "$after" "$((after - before))" "$rss" "$t"
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        rm -rf "$work/rss-$m"
    done
fi
