#!/usr/bin/env python3
"""Start-up of `cat-file --batch-check` against git's, in one alternating run: an empty stream, and a handful of
ids drawn uniformly with a seed (what a short-lived client pays before its first answers).

  python3 benches/startup.py --repo DIR [--git GIT] [--cat-blobd BIN] [--runs 40] [--queries 10] [--seed 1]

Each run starts git and cat-blobd on the same input, alternating which goes first. Each process is timed from its
spawn to its exit (wall), with its own CPU time from wait4; its output goes through a pipe that this script reads
to the end. Its peak RSS is measured in a second start under `/usr/bin/time -f %M` (a child forked from this
script would count this script's own memory as its peak). Printed: medians of wall, CPU and peak RSS, and
cat-blobd's ratios to git's.
The sample line says how many packs its ids are in, and where those packs come in git's search order (newest
first), since that is how many indexes the first lookups must open when there is no multi-pack-index.
"""
import argparse
import os
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", LC_ALL="C")


def peak_rss(argv, stdin_path, git_dir):
    """Peak RSS in KiB of one run, as GNU time measures it."""
    with open(stdin_path, "rb") as stdin:
        done = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, stdin=stdin, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=dict(ENV, GIT_DIR=git_dir), check=True)
    return int(done.stderr.split()[-1])


def run_once(argv, stdin_path, git_dir):
    """Wall seconds, CPU seconds, peak RSS KiB, output bytes of one run."""
    env = dict(ENV, GIT_DIR=git_dir)
    with open(stdin_path, "rb") as stdin:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, env=env)
        out = 0
        while True:
            chunk = child.stdout.read(1 << 16)
            if not chunk:
                break
            out += len(chunk)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit("%s exited with %d" % (argv, child.returncode))
    return wall, usage.ru_utime + usage.ru_stime, peak_rss(argv, stdin_path, git_dir), out


def pack_positions(git_dir, ids):
    """For each pack of git_dir holding one of `ids`: its position in git's search order (newest .pack first)."""
    pack_dir = os.path.join(git_dir, "objects", "pack")
    idxs = sorted(f for f in os.listdir(pack_dir) if f.endswith(".idx"))
    order = sorted(idxs, key=lambda f: -int(os.stat(os.path.join(pack_dir, f[:-4] + ".pack")).st_mtime))
    wanted = {bytes.fromhex(i) for i in ids}
    positions = set()
    for position, name in enumerate(order):
        with open(os.path.join(pack_dir, name), "rb") as f:
            data = f.read()
        assert data[:8] == b"\xfftOc\x00\x00\x00\x02", name
        count = struct.unpack(">I", data[8 + 255 * 4:8 + 256 * 4])[0]
        table = data[8 + 1024:8 + 1024 + 20 * count]
        if any(table[k * 20:k * 20 + 20] in wanted for k in range(count)):
            positions.add(position)
    return sorted(positions), len(order)


def draw(git, repo, count, seed):
    """`count` ids drawn uniformly (reservoir sampling, seeded) from every object of `repo`, and how many there are.
    Streamed, so that this script stays small: each child it forks starts as large as it is."""
    rng = random.Random(seed)
    sample = []
    listing = subprocess.Popen([git, "--git-dir", repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
                               env=ENV, stdout=subprocess.PIPE)
    seen = 0
    for line in listing.stdout:
        if seen < count:
            sample.append(line.decode().strip())
        else:
            slot = rng.randrange(seen + 1)
            if slot < count:
                sample[slot] = line.decode().strip()
        seen += 1
    if listing.wait() != 0:
        sys.exit("listing the objects failed")
    return sample, seen


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--git", default="git")
    ap.add_argument("--cat-blobd", default=os.path.join(HERE, "target/release/cat-blobd"))
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    sample, total = draw(args.git, args.repo, args.queries, args.seed)
    positions, packs = pack_positions(args.repo, sample)
    print("repo %s: %d objects; sample of %d ids (seed %d) in %d of %d packs, at search positions %s" % (
        args.repo, total, len(sample), args.seed, len(positions), packs, positions))

    tmp = tempfile.mkdtemp(prefix="startup-bench.")
    empty = os.path.join(tmp, "empty")
    queries = os.path.join(tmp, "queries")
    open(empty, "wb").close()
    with open(queries, "w") as f:
        f.write("".join(i + "\n" for i in sample))
    tools = {"git": [args.git, "cat-file", "--batch-check"], "cat-blobd": [args.cat_blobd, "cat-file", "--batch-check"]}
    cases = {"empty stream": empty, "%d queries" % len(sample): queries}
    results = {(case, tool): [] for case in cases for tool in tools}
    outputs = {}
    for run in range(args.runs + 3):
        for case, path in cases.items():
            order = list(tools) if run % 2 == 0 else list(reversed(tools))
            for tool in order:
                wall, cpu, rss, out = run_once(tools[tool], path, args.repo)
                outputs.setdefault(case, {})[tool] = out
                if run >= 3:  # the first three are warm-up
                    results[(case, tool)].append((wall, cpu, rss))
    os.remove(empty)
    os.remove(queries)
    os.rmdir(tmp)
    for case in cases:
        assert outputs[case]["git"] == outputs[case]["cat-blobd"], "different output lengths for %s" % case
        row = {}
        for tool in tools:
            values = results[(case, tool)]
            row[tool] = (statistics.median(v[0] for v in values) * 1000, statistics.median(v[1] for v in values) * 1000,
                         statistics.median(v[2] for v in values) / 1024)
        for tool in tools:
            wall, cpu, rss = row[tool]
            print("%-14s %-10s wall %6.2f ms  cpu %6.2f ms  peak RSS %6.1f MiB" % (case, tool, wall, cpu, rss))
        (gw, gc, gr), (cw, cc, cr) = row["git"], row["cat-blobd"]
        print("%-14s cat-blobd/git: wall %.2fx  cpu %.2fx  RSS %.2fx  (medians of %d alternating runs)" % (
            case, cw / gw, cc / gc, cr / gr, args.runs))


if __name__ == "__main__":
    main()
