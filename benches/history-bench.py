#!/usr/bin/env python3
"""Every front end on a history-shaped linux stand-in (issue 28): cat-blobd, git 2.55, gitoxide and libgit2 on
the same ids, every output through a pipe drained here, alternating runs, medians, ratios to git in the same run.

    benches/history-bench.py [--corpus DIR | --preset small-A|small-B|A|B] [--variant repo|midx|bitmap]
                             [--git GIT] [--count 20000] [--check-count 100000] [--ls-count 10000]
                             [--runs 5] [--seed 1] [--workloads LIST] [--threads 2] [--floor] [--no-build]

--corpus is a directory benches/linux-history.sh built (its COMPLETE must exist); without it, --preset (default
small-A) is built the first time under target/bench-corpus/linux-history-PRESET/ (see linux-history.sh for how
long). CAT_BLOBD and PEERS name prebuilt binaries; otherwise this script builds both (release) first. FLOOR names
a build of benches/floor: it then runs beside cat-blobd as "floor: the work" (each needed entry inflated once,
each delta applied once, one thread, the whole stream read first); CAT_BLOBD_BEFORE another build of cat-blobd,
run beside it as "cat-blobd before".

Workloads (--workloads, comma-separated; default all):
  cat-blob        `cat-blob <id>` for --count blobs drawn uniformly (seeded), in random, pack and history order:
                  git fast-import, cat-blobd
  batch           the same blobs and orders as bare ids to `cat-file --batch --buffer`: git, cat-blobd cat-file,
                  gix, libgit2
  batch-objects   --count objects of every type, drawn uniformly, random order, `--batch --buffer`: same tools
  batch-check     --check-count objects of every type, random order, `--batch-check --buffer`: same tools
  all-check       `cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype) %(objectsize)
                  %(objectsize:disk)'` (git filter-repo --analyze's first step), sorted and --unordered: git,
                  cat-blobd cat-file
  pipeline        the mission's pipeline over every blob: `git cat-file --batch-all-objects [--unordered]
                  --filter=object:type=blob --batch-check='cat-blob %(objectname)' | TOOL` (git 2.55 lists; TOOL
                  is git fast-import or cat-blobd; for the cat-file speakers and the peers the list is bare ids)
  ls              --ls-count `ls <commit> <path>` over 40 commits drawn uniformly, paths at depth >= 3: git
                  fast-import, cat-blobd

Before anything is timed, every tool's output is checked against git's: the same bytes (a SHA-1 of the whole
stream), and for the sampled workloads the byte count the inventory predicts. Each sample prints how many
distinct delta chains it touches (a chain: the object whose delta bases, followed to the end, reach one root).
--floor adds `cat` of git's answer through the same pipe to the same reader: the floor the pipe sets.

Columns: wall s, the median wall time from spawn to EOF and exit (min-max over the runs); CPU s, the median user +
sys time of the tool's processes (all threads; both processes of a pipeline), from wait4; CPU µs/req, that over
the requests; git÷tool, the median wall time of the git tool listed above the row over the row's; CPU git÷, the
same for CPU; load, the 1-minute load average before and after the workload. On a loaded machine wall times
measure the scheduler as much as the tool: read CPU git÷ there.

Results: a table on stdout and target/bench-results/history-<time>.{txt,md,json}. See benches/README.md.
"""
import argparse
import fcntl
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(HERE)
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", LC_ALL="C")
for var in ("GIT_DIR", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"):
    ENV.pop(var, None)
ALL_WORKLOADS = ["cat-blob", "batch", "batch-objects", "batch-check", "all-check", "pipeline", "ls"]
ALL_CHECK_FORMAT = "%(objectname) %(objecttype) %(objectsize) %(objectsize:disk)"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", help="a directory benches/linux-history.sh built")
    p.add_argument("--preset", default="small-A", help="built under target/bench-corpus/ when --corpus is not given")
    p.add_argument("--variant", default="repo", choices=["repo", "midx", "bitmap"])
    p.add_argument("--git", default="/work/git-src/v2.55.0/git", help="the git compared with (default: 2.55)")
    p.add_argument("--count", type=int, default=20000)
    p.add_argument("--check-count", type=int, default=100000)
    p.add_argument("--ls-count", type=int, default=10000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workloads", default=",".join(ALL_WORKLOADS))
    p.add_argument("--threads", type=int, default=2, help="threads of the peers (gix, libgit2)")
    p.add_argument("--no-build", action="store_true", help="use target/release binaries as they are")
    p.add_argument("--no-peers", action="store_true", help="leave gix and libgit2 out")
    p.add_argument("--floor", action="store_true",
                   help="also time `cat` of git's answer through the same pipe (the pipe's floor)")
    args = p.parse_args()
    args.workloads = [w for w in args.workloads.split(",") if w]
    for w in args.workloads:
        if w not in ALL_WORKLOADS:
            p.error("unknown workload %r" % w)
    return args


def load():
    return open("/proc/loadavg").read().split()[0]


def corpus_dir(args):
    if args.corpus:
        path = os.path.realpath(args.corpus)
        if not os.path.exists(os.path.join(path, "COMPLETE")):
            sys.exit("%s has no COMPLETE: build it with benches/linux-history.sh" % path)
        return path
    path = os.path.join(TARGET, "bench-corpus", "linux-history-" + args.preset)
    if not os.path.exists(os.path.join(path, "COMPLETE")):
        print("building the %s stand-in in %s" % (args.preset, path), file=sys.stderr)
        subprocess.run(["bash", os.path.join(HERE, "linux-history.sh"), path, args.preset], check=True, env=ENV)
    return path


def binaries(args):
    """cat-blobd and the peers' program: $CAT_BLOBD / $PEERS, else release builds made here (the peers' under
    target/peers/, with a `[workspace]` of their own)."""
    cat_blobd = os.environ.get("CAT_BLOBD")
    if not cat_blobd:
        if not args.no_build:
            subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        cat_blobd = os.path.join(TARGET, "release", "cat-blobd")
    peers = os.environ.get("PEERS")
    if not peers:
        peers_target = os.path.join(TARGET, "peers")
        if not args.no_build and not args.no_peers:
            subprocess.run(["cargo", "build", "--release", "--quiet", "--manifest-path",
                            os.path.join(HERE, "peers", "Cargo.toml")], check=True,
                           env=dict(os.environ, CARGO_TARGET_DIR=peers_target))
        peers = os.path.join(peers_target, "release", "peers")
    return cat_blobd, peers


class Inventory:
    """Every object: id, type, size, and the root of its delta chain; in the order git lists them (pack order)."""

    def __init__(self, git, repo):
        out = subprocess.run([git, "--git-dir=" + repo, "cat-file", "--batch-all-objects", "--unordered",
                              "--batch-check=%(objectname) %(objecttype) %(objectsize) %(deltabase)"],
                             check=True, stdout=subprocess.PIPE, env=ENV).stdout
        self.ids, self.types, self.sizes, bases = [], [], [], []
        for line in out.splitlines():
            oid, kind, size, base = line.split(b" ")
            self.ids.append(oid)
            self.types.append(kind)
            self.sizes.append(int(size))
            bases.append(base)
        self.index = {oid: i for i, oid in enumerate(self.ids)}
        null = b"0" * len(self.ids[0])
        parent = [self.index.get(b, -1) if b != null else -1 for b in bases]
        self.root = [-1] * len(self.ids)
        for i in range(len(self.ids)):
            path, at = [], i
            while self.root[at] < 0 and parent[at] >= 0:
                path.append(at)
                at = parent[at]
            root = self.root[at] if self.root[at] >= 0 else at
            self.root[at] = root
            for link in path:
                self.root[link] = root
        self.deltas = sum(1 for p in parent if p >= 0)

    def chains(self, sample):
        return len({self.root[i] for i in sample})

    def describe(self, sample):
        kinds = {}
        for i in sample:
            kinds[self.types[i]] = kinds.get(self.types[i], 0) + 1
        mix = ", ".join("%d %ss" % (n, k.decode()) for k, n in sorted(kinds.items()))
        return "%d ids (%s) touching %d distinct delta chains" % (len(sample), mix, self.chains(sample))


def history_positions(git, repo):
    """Each object's place in `git rev-list --objects --all` (newest history first)."""
    out = subprocess.run([git, "--git-dir=" + repo, "rev-list", "--objects", "--all"], check=True,
                         stdout=subprocess.PIPE, env=ENV).stdout
    positions = {}
    for n, line in enumerate(out.splitlines()):
        positions.setdefault(line.split(b" ", 1)[0], n)
    return positions


class Stream:
    """A request stream: its files per protocol, the bytes a correct answer has, and what it holds."""

    def __init__(self, name, note, files, expected):
        self.name, self.note, self.files, self.expected = name, note, files, expected


def write_requests(work, name, inv, sample):
    files = {}
    for protocol, prefix in (("fast-import", b"cat-blob "), ("ids", b"")):
        path = os.path.join(work, "%s.%s" % (name, protocol))
        with open(path, "wb") as f:
            f.write(b"".join(prefix + inv.ids[i] + b"\n" for i in sample))
        files[protocol] = path
    batch = sum(len(inv.ids[i]) + len(inv.types[i]) + len(str(inv.sizes[i])) + 3 + inv.sizes[i] + 1 for i in sample)
    check = sum(len(inv.ids[i]) + len(inv.types[i]) + len(str(inv.sizes[i])) + 3 for i in sample)
    return files, {"batch": batch, "check": check}


class Tool:
    """A command, the protocol of its input (fast-import, ids or none), and its output kind (tools of one kind
    must write the same bytes); `lister` makes it the second half of a pipeline."""

    def __init__(self, label, argv, protocol, output, env=None, lister=None):
        self.label, self.argv, self.protocol, self.output = label, argv, protocol, output
        self.env, self.lister = env or ENV, lister


def pipe_max_size():
    """`/proc/sys/fs/pipe-max-size`, or None without /proc."""
    try:
        with open("/proc/sys/fs/pipe-max-size") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


PIPE_MAX_SIZE = pipe_max_size()


def set_pipe_size(fd):
    """Every tool's output pipe as large as the system allows, as cat-blobd makes its own: the same pipe for every
    tool, and `cat` of an answer (the pipe's floor) not held to 64 KiB a wake-up."""
    if PIPE_MAX_SIZE is None:
        return
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_MAX_SIZE)
    except OSError:
        pass  # refused: the default pipe


def run_once(tool, stdin_path, digest, keep=None):
    """Runs the tool (or its pipeline) with stdin from the file; returns wall s, CPU s of every process, the byte
    count and digest of its stdout, read here in 1 MiB reads (and written to the file `keep` if given)."""
    start = time.perf_counter()
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    procs = []
    if tool.lister:
        lister = subprocess.Popen(tool.lister, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=ENV)
        procs.append(lister)
        stdin = lister.stdout
    proc = subprocess.Popen(tool.argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool.env)
    procs.append(proc)
    if tool.lister:
        procs[0].stdout.close()
    fd = proc.stdout.fileno()
    set_pipe_size(fd)
    h = hashlib.sha1() if digest else None
    kept = open(keep, "wb") if keep else None
    size = 0
    # One buffer, reused: `os.read` of 1 MiB made a fresh 1 MiB object a read (an mmap, 256 page faults, munmap),
    # which held this reader to ~1.5 GB/s, slower than cat-blobd writes every blob of small-A.
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    while True:
        n = os.readv(fd, [buf])
        if not n:
            break
        size += n
        if h:
            h.update(view[:n])
        if kept:
            kept.write(view[:n])
    if kept:
        kept.close()
    err = proc.stderr.read()
    cpu = 0.0
    for p in procs:
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        cpu += usage.ru_utime + usage.ru_stime
        if p.returncode != 0:
            sys.exit("%s failed (exit %d): %s" % (tool.label, p.returncode, err.decode(errors="replace")[-2000:]))
    wall = time.perf_counter() - start
    if stdin_path:
        stdin.close()
    return wall, cpu, size, h.hexdigest() if h else None


def measure(stream, tools, runs, requests, floor_file):
    """Verifies every tool's output, then `runs` alternating rounds; returns one row per tool. With `floor_file`,
    the first tool's answer is kept there and `cat` of it through the same pipe runs as a tool too: the floor
    that the pipe and this reader set."""
    reference = {}
    for n, tool in enumerate(tools):
        keep = floor_file if floor_file and n == 0 else None
        _, _, size, digest = run_once(tool, stream.files.get(tool.protocol), True, keep)
        expected = stream.expected.get(tool.output)
        if expected is not None and size != expected:
            sys.exit("WRONG OUTPUT: %s wrote %d bytes for %s, expected %d" % (tool.label, size, stream.name, expected))
        first = reference.setdefault(tool.output, (tool.label, size, digest))
        if first[1:] != (size, digest):
            sys.exit("WRONG OUTPUT: %s and %s differ on %s (%d vs %d bytes)" % (
                first[0], tool.label, stream.name, first[1], size))
    if floor_file:
        tools = tools + [Tool("floor: cat of the answer", ["cat", floor_file], None, tools[0].output)]
    times = {tool.label: [] for tool in tools}
    load_before = load()
    for _ in range(runs):
        for tool in tools:
            wall, cpu, size, _ = run_once(tool, stream.files.get(tool.protocol), False)
            if size != reference[tool.output][1]:
                sys.exit("WRONG OUTPUT: %s wrote %d bytes on a timed run of %s" % (tool.label, size, stream.name))
            times[tool.label].append((wall, cpu))
    rows = []
    for tool in tools:
        walls = [w for w, _ in times[tool.label]]
        rows.append({
            "workload": stream.name, "tool": tool.label, "output": tool.output,
            "wall": statistics.median(walls), "min": min(walls), "max": max(walls),
            "cpu": statistics.median(c for _, c in times[tool.label]),
            "bytes": reference[tool.output][1], "requests": requests,
            "load": "%s-%s" % (load_before, load()),
        })
    base = rows[0]
    for row in rows:  # each git tool is the baseline of the tools listed after it
        if row["tool"].startswith("git "):
            base = row
        row["ratio"] = base["wall"] / row["wall"]
        row["cpu_ratio"] = base["cpu"] / max(row["cpu"], 1e-6)
    return rows


def print_rows(rows, out):
    for row in rows:
        line = "%-22s %-26s %9.3f (%7.3f-%7.3f) %8.3f %11.1f %8.2fx %8.2fx  %s" % (
            row["workload"], row["tool"], row["wall"], row["min"], row["max"], row["cpu"],
            row["cpu"] / max(1, row["requests"]) * 1e6, row["ratio"], row["cpu_ratio"], row["load"])
        print(line, flush=True)
        out.append(line)


def markdown(rows):
    """The rows as a Markdown table: per workload and tool, wall and CPU medians and both ratios to git."""
    lines = ["| workload | tool | wall s | CPU s | git ÷ tool (wall) | git ÷ tool (CPU) |", "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append("| %s | %s | %.3f | %.3f | %.2f× | %.2f× |" % (
            row["workload"], row["tool"], row["wall"], row["cpu"], row["ratio"], row["cpu_ratio"]))
    return "\n".join(lines) + "\n"


def ls_stream(git, repo, work, count, seed):
    """`ls <commit> <path>` requests: 40 commits drawn uniformly from the history; each request names one of them
    and a path at depth >= 3 in its tree (a file or a directory, drawn uniformly), or 10% of the time that path's
    directory, or 10% of the time a path that is not there (`<path>.missing`)."""
    rng = random.Random(seed)
    commits = subprocess.run([git, "--git-dir=" + repo, "rev-list", "--all"], check=True, stdout=subprocess.PIPE,
                             env=ENV).stdout.split()
    chosen = rng.sample(commits, min(40, len(commits)))
    trees = []
    for commit in chosen:
        out = subprocess.run([git, "--git-dir=" + repo, "ls-tree", "-r", "-t", "--name-only", commit], check=True,
                             stdout=subprocess.PIPE, env=ENV).stdout.splitlines()
        deep = [p for p in out if p.count(b"/") >= 2]
        trees.append(deep)
    lines = []
    for _ in range(count):
        k = rng.randrange(len(chosen))
        path = rng.choice(trees[k])
        roll = rng.random()
        if roll < 0.1:
            path = path.rsplit(b"/", 1)[0]
        elif roll < 0.2:
            path = path + b".missing"
        lines.append(b"ls " + chosen[k] + b" " + path + b"\n")
    path = os.path.join(work, "ls.fast-import")
    with open(path, "wb") as f:
        f.write(b"".join(lines))
    note = "%d requests over %d commits drawn uniformly (seed %d); paths at depth >= 3 drawn uniformly from each " \
           "commit's tree, 10%% their directory, 10%% missing" % (count, len(chosen), seed)
    return Stream("ls", note, {"fast-import": path}, {})


def scratch_repo(git, repo, work):
    """git fast-import writes into its repository: an empty one that borrows `repo`'s objects as an alternate."""
    scratch = os.path.join(work, "fast-import-scratch.git")
    subprocess.run(["rm", "-rf", scratch], check=True)
    subprocess.run(["git", "init", "-q", "--bare", scratch], check=True, env=ENV)  # any git: an empty repository
    with open(os.path.join(scratch, "objects", "info", "alternates"), "w") as f:
        f.write(os.path.join(repo, "objects") + "\n")
    return scratch


FLOOR = os.environ.get("FLOOR")
# Another cat-blobd (the build before a change), run in the same alternating rounds as "cat-blobd before".
BEFORE = os.environ.get("CAT_BLOBD_BEFORE")


def work_floor(repo, protocol):
    """$FLOOR (benches/floor): each needed entry inflated once, each delta applied once, on one thread, the whole
    stream read first; the work's floor, beside the pipe's (--floor)."""
    return Tool("floor: the work", [FLOOR, repo], protocol, "batch")


def tools_for(kind, git, repo, scratch, cat_blobd, peers, threads):
    """The tools of one kind of request; git's comes first (the ratio baseline). No peers when `peers` is None."""
    env = dict(ENV, GIT_DIR=repo)
    if kind == "cat-blob":
        return [Tool("git fast-import", [git, "--git-dir=" + scratch, "fast-import", "--quiet", "--cat-blob-fd=1"],
                     "fast-import", "batch"),
                Tool("cat-blobd", [cat_blobd, "--git-dir", repo, "--quiet"], "fast-import", "batch")] + (
                    [Tool("cat-blobd before", [BEFORE, "--git-dir", repo, "--quiet"], "fast-import", "batch")]
                    if BEFORE else []) + ([work_floor(repo, "fast-import")] if FLOOR else [])
    if kind == "ls":
        return [Tool("git fast-import", [git, "--git-dir=" + scratch, "fast-import", "--quiet", "--cat-blob-fd=1"],
                     "fast-import", "ls"),
                Tool("cat-blobd", [cat_blobd, "--git-dir", repo, "--quiet"], "fast-import", "ls")] + (
                    [Tool("cat-blobd before", [BEFORE, "--git-dir", repo, "--quiet"], "fast-import", "ls")]
                    if BEFORE else [])
    mode, output, flag = ("--batch", "batch", []) if kind == "batch" else ("--batch-check", "check", ["--check"])
    tools = [Tool("git cat-file", [git, "--git-dir=" + repo, "cat-file", mode, "--buffer"], "ids", output),
             Tool("cat-blobd cat-file", [cat_blobd, "cat-file", mode, "--buffer"], "ids", output, env)]
    if BEFORE:
        tools.append(Tool("cat-blobd before cat-file", [BEFORE, "cat-file", mode, "--buffer"], "ids", output, env))
    if kind == "batch" and FLOOR:
        tools.append(work_floor(repo, "ids"))
    if peers is None:
        return tools
    return tools + [Tool("%s (%d threads)" % (name, threads),
                         [peers, library, "--git-dir", repo, "--threads", str(threads)] + flag, "ids", output)
                    for name, library in (("gix", "gix"), ("libgit2", "git2"))]


def main():
    args = parse_args()
    started = time.time()
    corpus = corpus_dir(args)
    repo = os.path.join(corpus, args.variant + ".git")
    cat_blobd, peers = binaries(args)
    if args.no_peers:
        peers = None
    git = args.git
    work = os.path.join(TARGET, "bench-work", "history")
    os.makedirs(work, exist_ok=True)
    scratch = scratch_repo(git, repo, work)
    out = []

    def say(line):
        print(line, flush=True)
        out.append(line)

    version = subprocess.run([git, "--version"], check=True, stdout=subprocess.PIPE).stdout.decode().strip()
    say("%s (%s); %s (%s); cat-blobd %s; %d runs, medians; %d cores; load %s at the start" % (
        repo, open(os.path.join(corpus, "shape.txt")).readline().strip(), version, git, cat_blobd, args.runs,
        os.cpu_count(), " ".join(open("/proc/loadavg").read().split()[:3])))
    inv = Inventory(git, repo)
    say("inventory: %d objects, %d of them deltas, in %d delta chains" % (
        len(inv.ids), inv.deltas, len(set(inv.root))))
    rng = random.Random(args.seed)
    blobs = [i for i, k in enumerate(inv.types) if k == b"blob"]
    blob_sample = rng.sample(blobs, min(args.count, len(blobs)))
    object_sample = rng.sample(range(len(inv.ids)), min(args.count, len(inv.ids)))
    check_sample = rng.sample(range(len(inv.ids)), min(args.check_count, len(inv.ids)))
    rows = []
    header = "%-22s %-26s %9s %19s %8s %11s %9s %9s  %s" % (
        "workload", "tool", "wall s", "(min-max)", "CPU s", "CPU µs/req", "git÷tool", "CPU git÷", "load")

    def run(stream, tools, requests):
        say("")
        say("%s: %s" % (stream.name, stream.note))
        say(header)
        floor = os.path.join(work, "floor.out") if args.floor else None
        new = measure(stream, tools, args.runs, requests, floor)
        if floor:
            os.unlink(floor)
        print_rows(new, out)
        rows.extend(new)

    orders = {}
    if {"cat-blob", "batch"} & set(args.workloads):
        positions = history_positions(git, repo)
        orders = {"random": blob_sample, "pack": sorted(blob_sample),
                  "history": sorted(blob_sample, key=lambda i: positions.get(inv.ids[i], len(inv.ids)))}
    for workload in ("cat-blob", "batch"):
        if workload not in args.workloads:
            continue
        for order, sample in orders.items():
            files, expected = write_requests(work, "blobs-" + order, inv, sample)
            note = "%s, drawn uniformly from %d blobs (seed %d), in %s order" % (
                inv.describe(sample), len(blobs), args.seed, order)
            run(Stream("%s %s" % (workload, order), note, files, expected),
                tools_for(workload, git, repo, scratch, cat_blobd, peers, args.threads), len(sample))
    for workload, sample, kind in (("batch-objects", object_sample, "batch"),
                                   ("batch-check", check_sample, "check")):
        if workload in args.workloads:
            files, expected = write_requests(work, workload, inv, sample)
            note = "%s, drawn uniformly from all %d objects (seed %d), in random order" % (
                inv.describe(sample), len(inv.ids), args.seed)
            run(Stream(workload + " random", note, files, expected),
                tools_for(kind, git, repo, scratch, cat_blobd, peers, args.threads), len(sample))
    if "all-check" in args.workloads:
        for unordered in ([], ["--unordered"]):
            argv = ["cat-file", "--batch-all-objects"] + unordered + ["--batch-check=" + ALL_CHECK_FORMAT]
            tools = [Tool("git cat-file", [git, "--git-dir=" + repo] + argv, None, "all"),
                     Tool("cat-blobd cat-file", [cat_blobd] + argv, None, "all", dict(ENV, GIT_DIR=repo))]
            name = "all-check" + (" unordered" if unordered else "")
            note = "`cat-file %s` over all %d objects" % (" ".join(argv[1:]), len(inv.ids))
            run(Stream(name, note, {}, {}), tools, len(inv.ids))
    if "pipeline" in args.workloads:
        nblobs = len(blobs)
        for unordered in (["--unordered"], []):
            def lister(fmt):
                return [git, "--git-dir=" + repo, "cat-file", "--batch-all-objects"] + unordered + [
                    "--filter=object:type=blob", "--batch-check=" + fmt]
            tools = []
            for tool in tools_for("cat-blob", git, repo, scratch, cat_blobd, peers, args.threads):
                tool.lister, tool.protocol = lister("cat-blob %(objectname)"), None
                tools.append(tool)
            for tool in tools_for("batch", git, repo, scratch, cat_blobd, peers, args.threads):
                tool.lister, tool.protocol = lister("%(objectname)"), None
                tools.append(tool)
            expected = sum(len(inv.ids[i]) + len(b" blob \n\n") + len(str(inv.sizes[i])) + inv.sizes[i] for i in blobs)
            name = "pipeline" + (" unordered" if unordered else " sorted")
            note = "`%s | TOOL` over all %d blobs (%s order); CPU is both processes'" % (
                " ".join(lister("cat-blob %(objectname)")[1:]), nblobs,
                "pack" if unordered else "object id")
            run(Stream(name, note, {}, {"batch": expected}), tools, nblobs)
    if "ls" in args.workloads:
        stream = ls_stream(git, repo, work, args.ls_count, args.seed)
        run(stream, tools_for("ls", git, repo, scratch, cat_blobd, peers, args.threads), args.ls_count)
    say("")
    say("done in %.0f s; load %s at the end" % (time.time() - started,
                                                 " ".join(open("/proc/loadavg").read().split()[:3])))
    results = os.path.join(TARGET, "bench-results")
    os.makedirs(results, exist_ok=True)
    stem = os.path.join(results, "history-%d" % int(started))
    with open(stem + ".txt", "w") as f:
        f.write("\n".join(out) + "\n")
    with open(stem + ".md", "w") as f:
        f.write(markdown(rows))
    with open(stem + ".json", "w") as f:
        json.dump({"corpus": corpus, "variant": args.variant, "git": version, "cat_blobd": cat_blobd,
                   "runs": args.runs, "seed": args.seed, "rows": rows}, f, indent=1)
    print("wrote %s.{txt,md,json}" % stem, file=sys.stderr)


if __name__ == "__main__":
    main()
