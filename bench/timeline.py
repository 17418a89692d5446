#!/usr/bin/env python3
"""Medians of a moat run's kernel-side steps, from bench/timeline.bt's
output: each step's time after the exec of moat, and the gap to the step
before. The runs are those of `bin/moat` (or any .../moat) executing
/bin/true; a step missing from a run (stage 2's exec, when it is forked
before the Go runtime) is left out of that run."""
import sys, collections, statistics

runs, cur = [], None
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) < 3 or not p[0].isdigit():
        continue
    t, ev, rest = int(p[0]) / 1000.0, p[2], p[3:]
    if ev == 'exec' and rest[0].endswith('/moat'):
        cur = {'exec moat': t}
        runs.append(cur)
        continue
    if cur is None:
        continue
    def mark(k):
        cur.setdefault(k, t)
    if ev == 'exec' and rest[0] == '/proc/self/exe':
        mark('stage 2 exec' if 'unshare user' not in cur else 'holder exec')
    elif ev == 'unshare' and rest[0] == '10000000':
        mark('unshare user')
    elif ev == 'unshare' and rest[0] == '20000':
        mark('command: unshare mount ns')
    elif ev == 'unshare':
        mark('unshare pid, net, ipc, uts')
    elif ev == 'fork':
        mark('fork init' if 'fork init' not in cur else 'init forks the command')
    elif ev == 'landlock':
        mark('command: Landlock (mounts done)')
    elif ev == 'exec' and rest[0] == '/bin/true':
        mark('exec /bin/true')
    elif ev == 'procexit' and rest[0] == 'true':
        mark('/bin/true exits')
    elif ev == 'procexit' and rest[0] == 'exe' and 'exec /bin/true' in cur:
        mark('init exits' if 'init exits' not in cur else 'stage 2 exits')
    elif ev == 'waitid-ret' and 'stage 2 exits' in cur:
        mark('moat reaps stage 2')
    elif ev == 'exit_group' and rest[0] == 'moat' and 'exec /bin/true' in cur:
        mark('moat exit_group')
    elif ev == 'reaped' and 'moat exit_group' in cur:
        mark('reaped by the caller')

done = [r for r in runs if 'reaped by the caller' in r]
print('%d runs' % len(done))
keys = collections.OrderedDict((k, 1) for r in done for k in r)
rows = sorted((statistics.median([r[k] - r['exec moat'] for r in done if k in r]), k) for k in keys)
prev = 0.0
for m, k in rows:
    print('%8.2f ms  (+%5.2f)  %s' % (m, m - prev, k))
    prev = m
