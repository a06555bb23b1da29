#!/usr/bin/env python3
"""Runs shell commands in alternating rounds and prints median wall and CPU (user+sys of the child) per command,
with the first command's median divided by each: `python3 benches/rounds.py N name=cmd name=cmd ...`; stdout goes to
/dev/null. Used for quick side-by-side runs where the full harnesses do not fit (benches/README.md)."""
import os, subprocess, sys, time, statistics, resource
n = int(sys.argv[1]); tools = [a.split('=', 1) for a in sys.argv[2:]]
res = {name: ([], []) for name, _ in tools}
for r in range(n):
    for name, cmd in tools:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.monotonic()
        subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, check=True)
        wall = time.monotonic() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        res[name][0].append(wall); res[name][1].append(cpu)
base = tools[0][0]
bw, bc = (statistics.median(x) for x in res[base])
print("load", open('/proc/loadavg').read().split()[:3])
for name, _ in tools:
    w, c = (statistics.median(x) for x in res[name])
    print(f"{name:12s} wall {w:.3f} cpu {c:.3f}  {base}/this wall {bw/w:.2f}x cpu {bc/c:.2f}x")
