#!/usr/bin/env python3
"""Paced A/B timing of commands: each round runs every command once, each
after a pause (default 300 ms), as an agent's commands come, seconds apart,
not back to back. Some costs show only so: the kernel's per-CPU rwsem of
cgroup migrations waits for an RCU grace period unless one passed moments
before, which a back-to-back loop (hyperfine, interleave.py) often finds
(docs/PERFORMANCE.md, eighteenth session).

    python3 bench/paced.py [-n ROUNDS] [-w WARMUP] [-p PAUSE_S] 'cmd A' 'cmd B' ...

Each command is split on spaces (no shell), started with posix_spawn with
stdin and stdout on /dev/null, and waited for; the figure is wall time from
spawn to reap. Binaries compared must have been written the same way
(dist/install-binary.sh; see interleave.py)."""
import argparse, os, statistics, time

ap = argparse.ArgumentParser()
ap.add_argument('-n', type=int, default=25, help='rounds (each command once per round)')
ap.add_argument('-w', type=int, default=3, help='warm-up rounds, not counted')
ap.add_argument('-p', type=float, default=0.3, help='pause before each command, in seconds')
ap.add_argument('cmds', nargs='+')
a = ap.parse_args()
argvs = [c.split() for c in a.cmds]
null = os.open(os.devnull, os.O_RDWR)
acts = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1)]
res = [[] for _ in argvs]
for r in range(a.w + a.n):
    for i, argv in enumerate(argvs):
        time.sleep(a.p)
        t = time.perf_counter_ns()
        pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=acts)
        _, st = os.waitpid(pid, 0)
        if r >= a.w:
            res[i].append((time.perf_counter_ns() - t) / 1e6)
        if st != 0:
            print(f"warning: exit status {st} from {a.cmds[i]}")
base = statistics.median(res[0])
for i, c in enumerate(a.cmds):
    xs = sorted(res[i])
    med = statistics.median(xs)
    print(f"{statistics.mean(xs):7.2f} ms mean {med:7.2f} median  p10 {xs[len(xs)//10]:6.2f}  p90 {xs[len(xs)*9//10]:6.2f}  ({med/base:.2f}x)  {c}")
