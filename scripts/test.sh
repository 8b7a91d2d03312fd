#!/usr/bin/env bash
# The README's test command: installs what the integration tests drive as
# real clients and reference servers (as root; otherwise it names what is
# missing and stops), starts the one-node Slurm that tests/slurm.rs needs,
# runs the whole suite, and stops Slurm again whatever happened.
#
# Usage: scripts/test.sh [FILTER...]   (FILTERs go to the test runner)
# The runner is cargo-nextest where installed (each test its own process;
# the serial groups in .config/nextest.toml), else `cargo test`. Both build
# the `test-fast` profile: release optimisation without LTO.
set -euo pipefail
cd "$(dirname "$0")/.."

# command -> Debian package, for every tool a test runs.
tools=(
  curl:curl ab:apache2-utils nginx:nginx wrk:wrk python3:python3
  pgrep:procps mount:mount script:bsdutils setpriv:util-linux
  prlimit:util-linux strace:strace chromium:chromium go:golang-go
  perf:linux-perf
)
have() { command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }
need=()
for t in "${tools[@]}"; do
  have "${t%%:*}" || [[ " ${need[*]} " == *" ${t#*:} "* ]] || need+=("${t#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "test.sh: missing tools; as root run: apt-get install ${need[*]} (or run this script as root)" >&2
    exit 1
  fi
  echo "test.sh: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "test.sh: cargo is missing (install Rust with rustup)" >&2; exit 1; }

# perf's syscall tracepoints (tests/accounting.rs, proc::syscalls) live in
# tracefs, which a fresh machine may not have mounted.
if [ ! -d /sys/kernel/tracing/events ] && [ "$(id -u)" = 0 ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || echo "test.sh: cannot mount tracefs; syscall counting tests will fail" >&2
fi

# go's build cache and GOPATH default to HOME, which may be missing or
# read-only here.
export GOCACHE="${GOCACHE:-${TMPDIR:-/tmp}/loadlab-test-go/cache}"
export GOPATH="${GOPATH:-${TMPDIR:-/tmp}/loadlab-test-go/path}"
export GOTOOLCHAIN=local GO111MODULE=off

# A one-node Slurm for tests/slurm.rs, stopped on exit unless it was
# already up before this script.
if command -v sinfo >/dev/null && sinfo -h -N -o '%t' 2>/dev/null | grep -qx idle; then
  echo "test.sh: Slurm already up; leaving it running"
elif [ "$(id -u)" = 0 ]; then
  trap scripts/slurm-down.sh EXIT
  scripts/slurm-up.sh
else
  echo "test.sh: tests/slurm.rs needs a one-node Slurm: run scripts/slurm-up.sh as root first" >&2
  exit 1
fi

if command -v cargo-nextest >/dev/null; then
  cargo nextest run --cargo-profile test-fast --no-fail-fast "$@"
else
  cargo test --profile test-fast --no-fail-fast "$@"
fi
