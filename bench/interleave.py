#!/usr/bin/env python3
"""Interleaved A/B timing of commands (issue #12's measure on a VM whose
speed drifts by 2-3x within minutes: hyperfine runs one command's samples
after the other's, so drift lands on one side; here every round runs each
command once, in a rotating order).

    python3 bench/interleave.py [-n ROUNDS] [-w WARMUP] 'cmd A' 'cmd B' ...

Binaries compared must have been written the same way (both built by the
Go linker, or both through dist/install-binary.sh): a copy made by cp or
install(1) starts 5-10 ms slower here than the same bytes written in one
go, from its page-cache layout alone (docs/PERFORMANCE.md).

Each command is split on spaces (no shell), started with posix_spawn and
waited for; the figure is wall time from spawn to reap. Prints the mean,
the median and the 10th/90th percentiles per command, and each command's
median relative to the first's."""
import os, sys, time, statistics, argparse

ap = argparse.ArgumentParser()
ap.add_argument('-n', type=int, default=40, help='rounds (each command once per round)')
ap.add_argument('-w', type=int, default=5, help='warm-up rounds, not counted')
ap.add_argument('cmds', nargs='+')
a = ap.parse_args()
argvs = [c.split() for c in a.cmds]
null = os.open(os.devnull, os.O_RDWR)
acts = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1)]

def once(argv):
    t = time.perf_counter_ns()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=acts)
    _, st = os.waitpid(pid, 0)
    d = time.perf_counter_ns() - t
    if os.waitstatus_to_exitcode(st) != 0:
        sys.exit('%s: exit %d' % (' '.join(argv), os.waitstatus_to_exitcode(st)))
    return d / 1e6

times = [[] for _ in argvs]
for r in range(a.w + a.n):
    order = list(range(len(argvs)))
    k = r % len(order)
    order = order[k:] + order[:k]
    for i in order:
        d = once(argvs[i])
        if r >= a.w:
            times[i].append(d)
base = statistics.median(times[0])
for c, ts in zip(a.cmds, times):
    q = statistics.quantiles(ts, n=10)
    print('%7.2f ms mean  %7.2f median  p10 %6.2f  p90 %6.2f  (%.2fx)  %s' % (
        statistics.mean(ts), statistics.median(ts), q[0], q[-1], statistics.median(ts) / base, c))
