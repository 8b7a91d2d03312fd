#!/usr/bin/env bash
# Stops what scripts/slurm-up.sh started: slurmd, slurmctld and munged,
# each by the pid in its pid file (nothing else on the machine is touched).
# The packages stay installed. Waits up to 10 s for each to exit.
set -euo pipefail

stop() {
  local name=$1 pidfile=$2
  [ -f "$pidfile" ] || return 0
  local pid
  pid=$(cat "$pidfile")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "slurm-down: $name (pid $pid) did not exit in 10 s" >&2
      return 1
    fi
    echo "slurm-down: stopped $name"
  fi
  rm -f "$pidfile"
}

stop slurmd /run/slurmd.pid
stop slurmctld /run/slurmctld.pid
stop munged /run/munge/munged.pid
