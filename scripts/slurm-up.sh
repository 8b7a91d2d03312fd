#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the sharded-bench tests
# (issue 22 item 5) and for trying `srun` locally. Installs Debian's
# slurmctld, slurmd, slurm-client and munge if missing, writes a one-node
# slurm.conf (CPUs=2 by default, proctrack/linuxproc, task/none: no cgroups,
# so it runs in a container without systemd), starts munged (as user munge),
# slurmctld and slurmd (as root, SlurmUser=root), and waits until `sinfo`
# shows the node idle. Idempotent: a node already idle is left as it is.
# The partition has OverSubscribe=FORCE, so `srun -n 4 --overcommit` runs
# four ranks on the two CPUs.
#
# Needs root. Environment: SLURM_UP_CPUS (2), SLURM_UP_TIMEOUT (60 s, the
# wait for the node to turn idle). Stop everything with scripts/slurm-down.sh.
set -euo pipefail

CPUS=${SLURM_UP_CPUS:-2}
TIMEOUT=${SLURM_UP_TIMEOUT:-60}
CONF=/etc/slurm/slurm.conf
NODE=$(hostname -s)

idle() { sinfo -h -N -o '%t' 2>/dev/null | grep -qx 'idle'; }

if command -v sinfo >/dev/null && idle; then
  echo "slurm-up: node $NODE already idle"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "slurm-up: needs root (it installs packages and starts daemons)" >&2; exit 1; }

need=()
command -v slurmctld >/dev/null || need+=(slurmctld)
command -v slurmd >/dev/null || need+=(slurmd)
command -v srun >/dev/null || need+=(slurm-client)
command -v munged >/dev/null || need+=(munge)
if [ ${#need[@]} -gt 0 ]; then
  echo "slurm-up: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # No init system here: keep the packages' scripts from starting daemons.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d.slurm-up
  chmod +x /usr/sbin/policy-rc.d.slurm-up
  had_policy=0
  [ -e /usr/sbin/policy-rc.d ] && had_policy=1
  [ $had_policy = 1 ] || cp /usr/sbin/policy-rc.d.slurm-up /usr/sbin/policy-rc.d
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  [ $had_policy = 1 ] || rm -f /usr/sbin/policy-rc.d
  rm -f /usr/sbin/policy-rc.d.slurm-up
fi

# munge: one key, readable by munge only; munged refuses anything looser.
mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
[ -s /etc/munge/munge.key ] || mungekey -c -k /etc/munge/munge.key
chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge /run/munge
chmod 700 /etc/munge && chmod 400 /etc/munge/munge.key
chmod 755 /run/munge
if ! pgrep -u munge -x munged >/dev/null; then
  runuser -u munge -- /usr/sbin/munged
fi

mkdir -p /etc/slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm
cat >"$CONF" <<CONF
# Written by loadlab scripts/slurm-up.sh: one node, no cgroups.
ClusterName=loadlab
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=loadlab Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
# -c: forget jobs of an earlier cluster (its state may name another node).
running /run/slurmctld.pid || slurmctld -c
running /run/slurmd.pid || slurmd

for _ in $(seq 1 "$TIMEOUT"); do
  if idle; then
    echo "slurm-up: node $NODE idle ($CPUS CPUs)"
    exit 0
  fi
  # A node left down or drained by an earlier run is returned to service.
  scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true
  sleep 1
done
echo "slurm-up: node $NODE not idle after ${TIMEOUT}s: $(sinfo -h -N -o '%t %E' 2>&1)" >&2
tail -n 5 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
