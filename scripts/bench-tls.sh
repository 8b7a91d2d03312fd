#!/usr/bin/env bash
# Client CPU per TLS handshake (issue 21 item 1). One nginx worker serves
# the same 6-byte answer on a plain and a TLS listener (ECDSA P-256
# certificate from a CA made here with openssl); loadlab bench (one
# thread, c=1, a new connection per request) runs N requests over http,
# https TLS 1.3 and https TLS 1.2 in interleaved rounds, and ab over http
# and https for comparison. Client CPU is user+sys from /usr/bin/time;
# per handshake = https minus http in the same round (the extra cost of
# the one small request's encryption is inside it). Prints medians and
# the spread over rounds.
#
# Needs: nginx, ab (apache2-utils), openssl, /usr/bin/time (time).
# Usage: scripts/bench-tls.sh [ROUNDS] [REQUESTS]   (defaults 7 and 2000)
# Loopback only; every run is bounded by REQUESTS.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-7}
N=${2:-2000}
for t in nginx ab openssl; do
  command -v $t >/dev/null || [ -x /usr/sbin/$t ] || { echo "missing $t (apt-get install nginx apache2-utils openssl)"; exit 1; }
done
[ -x /usr/bin/time ] || { echo "missing /usr/bin/time (apt-get install time)"; exit 1; }
cargo build --release --quiet --bin loadlab
LOADLAB=$PWD/${CARGO_TARGET_DIR:-target}/release/loadlab
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
D=$(mktemp -d)
trap '[ -f $D/n.pid ] && kill $(cat $D/n.pid) 2>/dev/null; rm -rf "$D"' EXIT
cd "$D"
ec() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "$@" 2>/dev/null; }
ec -x509 -keyout cak.pem -out ca.pem -days 1 -subj /CN=bench-tls-ca
ec -keyout k.pem -out r.csr -subj /CN=localhost
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > ext
openssl x509 -req -in r.csr -CA ca.pem -CAkey cak.pem -CAcreateserial -out c.pem -days 1 -extfile ext 2>/dev/null
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
P=$(port); S=$(port)
cat > n.conf <<CONF
daemon off; worker_processes 1; pid $D/n.pid; error_log $D/err.log;
events {}
http { access_log off; server { listen 127.0.0.1:$P; listen 127.0.0.1:$S ssl;
  ssl_protocols TLSv1.2 TLSv1.3; ssl_certificate $D/c.pem; ssl_certificate_key $D/k.pem;
  location / { return 200 "hello\n"; } } }
CONF
"$NGINX" -p "$D" -c "$D/n.conf" -e "$D/err.log" & 
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$P/" >/dev/null 2>&1 && break; sleep 0.1; done
# CPU microseconds per request of one client run.
cpu() { /usr/bin/time -f '%U %S' -o t "$@" > out 2>/dev/null || { cat out; exit 1; }
        grep -q 'Failed requests:        0$' out || { echo "failures: $*"; cat out; exit 1; }
        awk -v n="$N" '{printf "%.1f\n", ($1+$2)*1e6/n}' t; }
declare -A R
for r in $(seq "$ROUNDS"); do
  R[http]+="$(cpu "$LOADLAB" bench -q --threads 1 -n "$N" "http://127.0.0.1:$P/") "
  R[tls13]+="$(cpu "$LOADLAB" bench -q --threads 1 -n "$N" -f TLS1.3 --cacert ca.pem "https://localhost:$S/") "
  R[tls12]+="$(cpu "$LOADLAB" bench -q --threads 1 -n "$N" -f TLS1.2 --cacert ca.pem "https://localhost:$S/") "
  R[ab_http]+="$(cpu ab -q -n "$N" "http://127.0.0.1:$P/") "
  R[ab_tls12]+="$(cpu ab -q -n "$N" "https://localhost:$S/") "
done
stats() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {printf "median %.1f (min %.1f, max %.1f)", a[int((NR+1)/2)], a[1], a[NR]}'; }
diffs() { paste -d' ' <(echo "${R[$1]}" | tr ' ' '\n' | grep .) <(echo "${R[$2]}" | tr ' ' '\n' | grep .) | awk '{print $1-$2}' | tr '\n' ' '; }
echo "client CPU us per request, $ROUNDS rounds of $N requests, c=1, no keep-alive"
for k in http tls13 tls12 ab_http ab_tls12; do printf '  %-9s %s\n' "$k" "$(echo "${R[$k]}" | stats)"; done
echo "client CPU us per handshake (https - http, paired by round)"
printf '  loadlab TLS 1.3  %s\n' "$(diffs tls13 http | stats)"
printf '  loadlab TLS 1.2  %s\n' "$(diffs tls12 http | stats)"
printf '  ab TLS 1.2       %s\n' "$(diffs ab_tls12 ab_http | stats)"
