#!/usr/bin/env python3
"""Small objects at random: git fast-import and git cat-file against cat-blobd (and an older cat-blobd), the same
requests, alternating runs, every output through a pipe drained here.

    benches/small-objects.py --repo DIR [--git GIT] [--before BIN] [--after BIN] [--count 20000]
                             [--max-size 4096] [--rounds 5] [--seed 23] [--ids FILE]

Draws --count blobs of at most --max-size bytes at random (seeded) from the whole repository (the inventory is
cached next to the ids under target/bench-small/), then, round after round, runs each tool on them:
`git fast-import --cat-blob-fd=1` and `cat-blobd` on `cat-blob <id>` lines, `git cat-file --batch --buffer` and
`cat-blobd cat-file --batch --buffer` on ids, and cat-blobd once more with `--threads 1` (CPU per request with
one resolver thread). Prints, per tool, the median wall time, its ratio to git's same front end, the median
user+sys CPU of the process, and CPU per request. The outputs of each front end are checked to be identical
first. See benches/README.md, "Small objects".
"""
import argparse
import hashlib
import os
import random
import resource
import statistics
import subprocess
import sys
import time


def inventory(git, repo, cache_dir):
    """Every blob's id and size, cached by the repository's pack names."""
    packs = sorted(os.listdir(os.path.join(repo, "objects", "pack"))) if os.path.isdir(
        os.path.join(repo, "objects", "pack")) else []
    key = hashlib.sha1((os.path.realpath(repo) + "\n" + "\n".join(packs)).encode()).hexdigest()[:16]
    path = os.path.join(cache_dir, "inventory-%s.txt" % key)
    if not os.path.exists(path):
        print("listing the blobs of %s (once)" % repo, file=sys.stderr)
        out = subprocess.run([git, "--git-dir=" + repo, "cat-file", "--batch-all-objects", "--unordered",
                              "--batch-check=%(objecttype) %(objectname) %(objectsize)"],
                             check=True, stdout=subprocess.PIPE).stdout
        blobs = [line.split(b" ", 1)[1] for line in out.splitlines() if line.startswith(b"blob ")]
        with open(path + ".tmp", "wb") as f:
            f.write(b"\n".join(blobs) + b"\n")
        os.rename(path + ".tmp", path)
    with open(path, "rb") as f:
        return [line.split(b" ") for line in f.read().splitlines() if line]


def run(cmd, stdin_path, env):
    """Runs `cmd` on the file; returns (wall, user+sys CPU of the child, output digest, output bytes, status)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(stdin_path, "rb") as f:
        proc = subprocess.Popen(cmd, stdin=f, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        digest, size = hashlib.sha1(), 0
        while True:
            chunk = proc.stdout.read(1 << 20)
            if not chunk:
                break
            digest.update(chunk)
            size += len(chunk)
        status = proc.wait()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, digest.hexdigest(), size, status


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--git", default="git")
    parser.add_argument("--before", help="an older cat-blobd to compare too")
    parser.add_argument("--after", default=os.path.join(os.path.dirname(__file__), "..", "target", "release",
                                                        "cat-blobd"))
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--max-size", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--ids", help="read the ids from this file instead of drawing them")
    args = parser.parse_args()
    repo = os.path.realpath(args.repo)
    work = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "target", "bench-small")
    os.makedirs(work, exist_ok=True)
    if args.ids:
        ids = open(args.ids, "rb").read().split()
    else:
        small = [oid for oid, size in inventory(args.git, repo, work) if int(size) <= args.max_size]
        ids = random.Random(args.seed).sample(small, min(args.count, len(small)))
    ids_file, cat_blob_file = os.path.join(work, "ids.txt"), os.path.join(work, "cat-blob.txt")
    with open(ids_file, "wb") as f:
        f.write(b"".join(oid + b"\n" for oid in ids))
    with open(cat_blob_file, "wb") as f:
        f.write(b"".join(b"cat-blob " + oid + b"\n" for oid in ids))
    env = dict(os.environ, GIT_DIR=repo, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    # git fast-import would write a pack and marks into the repository it reads: an empty objects directory of
    # its own, the repository's as an alternate, keeps it out.
    scratch = os.path.join(work, "git-fast-import.git")
    subprocess.run(["git", "init", "-q", "--bare", scratch], check=True)
    with open(os.path.join(scratch, "objects", "info", "alternates"), "w") as f:
        f.write(os.path.join(repo, "objects") + "\n")
    binaries = [("cat-blobd", args.after)] + ([("before", args.before)] if args.before else [])
    tools = [("fast-import", "git fast-import", [args.git, "--git-dir=" + scratch, "fast-import",
                                                "--cat-blob-fd=1", "--quiet"], cat_blob_file)]
    tools += [("fast-import", name, [path], cat_blob_file) for name, path in binaries]
    tools += [("fast-import", "cat-blobd --threads 1", [args.after, "--threads", "1"], cat_blob_file)]
    tools += [("cat-file", "git cat-file", [args.git, "cat-file", "--batch", "--buffer"], ids_file)]
    tools += [("cat-file", name + " cat-file", [path, "cat-file", "--batch", "--buffer"], ids_file)
              for name, path in binaries]
    tools += [("cat-file", "cat-blobd cat-file --threads 1",
               [args.after, "cat-file", "--batch", "--buffer"], ids_file)]
    one_thread = dict(env, CAT_BLOBD_THREADS="1")
    results = {name: [] for _, name, _, _ in tools}
    expected = {}
    for round_ in range(args.rounds + 1):
        for front, name, cmd, stdin_path in tools:
            wall, cpu, digest, size, status = run(cmd, stdin_path, one_thread if "--threads 1" in name else env)
            if status != 0 or expected.setdefault(front, (digest, size)) != (digest, size):
                sys.exit("%s: exit %d, %d bytes: not what the others wrote" % (name, status, size))
            if round_ > 0:  # the first round warms the page cache and checks the bytes
                results[name].append((wall, cpu))
    print("%d blobs of at most %d bytes drawn at random from %s; %d rounds, medians" % (
        len(ids), args.max_size, repo, args.rounds))
    print("%-32s %10s %12s %10s %14s" % ("tool", "wall (s)", "git ÷ tool", "CPU (s)", "CPU/request"))
    git_wall = {}
    for front, name, _, _ in tools:
        wall = statistics.median(w for w, _ in results[name])
        cpu = statistics.median(c for _, c in results[name])
        git_wall.setdefault(front, wall)
        print("%-32s %10.3f %11.2fx %10.3f %11.1f µs" % (name, wall, git_wall[front] / wall, cpu,
                                                         cpu / len(ids) * 1e6))


if __name__ == "__main__":
    main()
