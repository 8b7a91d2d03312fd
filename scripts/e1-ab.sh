#!/usr/bin/env bash
# Experiment E1: `ab -n 1000 -c C` for C in 1 50 100 500 1000 against each
# built-in model (`loadlab serve --list-models`), each started on 127.0.0.1
# port 0. Prints one
# Markdown table on stdout (the machine is described on stderr).
#
#   scripts/e1-ab.sh                 # build if needed, run everything
#   LOADLAB_BIN=path/to/loadlab E1_MODELS="event-loop" E1_CONCURRENCY="1 50" scripts/e1-ab.sh
#   E1_KEEP=dir scripts/e1-ab.sh     # also keep every raw ab report in dir
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${LOADLAB_BIN:-${CARGO_TARGET_DIR:-target}/release/loadlab}
if [ ! -x "$bin" ]; then
  cargo build --release --bin loadlab >&2
fi
command -v ab >/dev/null || { echo "e1-ab: ab is missing (apt-get install apache2-utils)" >&2; exit 1; }

requests=${E1_REQUESTS:-1000}
levels=${E1_CONCURRENCY:-"1 50 100 500 1000"}
models=${E1_MODELS:-$("$bin" serve --list-models | cut -f1)}
path=${E1_PATH:-/500B.html}

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1), Linux $(uname -r)" >&2
echo "command: ab -n $requests -c C -s 30 http://127.0.0.1:PORT$path" >&2

tmp=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
# bash skips the EXIT trap when a signal kills it; exit instead so the
# server is stopped.
trap 'exit 130' INT TERM

# The value after `label` in an ab report (first match), or a default.
field() { sed -n "s/^$2: *\([0-9.]*\).*/\1/p" "$1" | head -1 | grep . || echo "${3:-?}"; }

echo "| model | C | time taken (s) | complete | failed | non-2xx | requests/s | mean time per request (ms) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for model in $models; do
  "$bin" serve --model "$model" --addr 127.0.0.1:0 >"$tmp/line" 2>"$tmp/stderr" &
  server=$!
  line=""
  for _ in $(seq 200); do
    line=$(head -n 1 "$tmp/line" 2>/dev/null || true)
    [ -n "$line" ] && break
    sleep 0.05
  done
  # "listening on http://127.0.0.1:41234 model=event-loop workers=1"
  addr=$(echo "$line" | sed -n 's|^listening on http://\([^ ]*\) .*|\1|p')
  if [ -z "$addr" ]; then
    echo "e1-ab: $model did not start: $line $(cat "$tmp/stderr")" >&2
    exit 1
  fi
  for c in $levels; do
    report="$tmp/ab-$model-$c.txt"
    ab -n "$requests" -c "$c" -s 30 "http://$addr$path" >"$report" 2>&1 || true
    if [ -n "${E1_KEEP:-}" ]; then mkdir -p "$E1_KEEP" && cp "$report" "$E1_KEEP/"; fi
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$model" "$c" \
      "$(field "$report" 'Time taken for tests')" \
      "$(field "$report" 'Complete requests')" \
      "$(field "$report" 'Failed requests')" \
      "$(field "$report" 'Non-2xx responses' 0)" \
      "$(field "$report" 'Requests per second')" \
      "$(field "$report" 'Time per request')"
  done
  kill -TERM "$server"
  wait "$server" || { echo "e1-ab: $model exited with $?" >&2; exit 1; }
  server=""
done
