#!/usr/bin/env python3
"""What a server's whole process tree has used so far (scripts/perf/run.sh).

Usage: tree_usage.py PID  ->  "CPU_NS SWITCHES"

CPU_NS: user + system CPU time, in nanoseconds, of PID and every
descendant (nginx's workers, prefork's children), each read from its
process CPU clock: all its threads, exited ones included, as utime +
stime in /proc/PID/stat count them but to the nanosecond (a 2 s run at a
few thousand requests/s is only 5-40 of /proc's 10 ms ticks, too coarse
for a ratio of 1.1), plus what the root has reaped from children that
ended (cutime + cstime, ticks: all the kernel keeps of them).
SWITCHES: voluntary + nonvoluntary context switches summed over every
live thread's /proc/PID/task/TID/status (a thread that has exited takes
its count with it, so thread-per-conn's figure is a lower bound).
"""
import os
import sys
import time


def tree(root):
    """root and all its descendants, through /proc/PID/task/TID/children."""
    out, i = [root], 0
    while i < len(out):
        try:
            for tid in os.listdir(f"/proc/{out[i]}/task"):
                with open(f"/proc/{out[i]}/task/{tid}/children") as f:
                    out += [int(p) for p in f.read().split()]
        except OSError:
            pass  # it ended meanwhile
        i += 1
    return out


def cpu_ns(pid):
    # The process CPU clock's id, as glibc's clock_getcpuclockid makes it
    # (MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)), which Python lacks.
    try:
        return time.clock_gettime_ns((~pid << 3) | 2)
    except OSError:
        return 0


def reaped_ns(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    # rest[0] is field 3 (state): cutime and cstime are fields 16 and 17.
    return (int(rest[13]) + int(rest[14])) * 10**9 // os.sysconf("SC_CLK_TCK")


def switches(pid):
    n = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                n += sum(int(l.split()[1]) for l in f if "ctxt_switches:" in l)
        except OSError:
            pass
    return n


root = int(sys.argv[1])
pids = tree(root)
print(sum(cpu_ns(p) for p in pids) + reaped_ns(root), sum(switches(p) for p in pids))
