#!/usr/bin/env python3
"""A forge's storage node (issue 29): many repositories under one root, clients reading them with Zipf-like
popularity, served two ways side by side in one run:

  pool    what Gitaly's catfile cache does: one `git cat-file --batch-command --buffer` per repository in use,
          checked out by one connection at a time, at most --pool-max (100) kept, each closed after --ttl (10 s)
          idle;
  daemon  one `cat-blobd serve --root`: each connection passes its pipes to it the way `cat-blobd connect` does
          (the hello and SCM_RIGHTS written by the client, so neither side pays a process start per connection);
  floor   benches/forge-client's floor server: the same connect protocol, every answer precomputed in memory
          (from `git cat-file --batch`), answered on the thread that accepted the connection: the least any
          server could cost this client on this machine, so what the harness and the machine alone set.

    benches/forge-node.py [--repos 100,1000,10000] [--clients 8] [--connections 400] [--requests 10] [--seed 29]
                          [--client rust|python] [--ways floor,pool,daemon] [--rate REQ_PER_S]
                          [--source /work/.mirror/git+git/repo] [--git GIT] [--cat-blobd BIN]
                          [--forge-client BIN] [--daemon-log PREFIX]

--client rust (the default) replays the run with benches/forge-client, a compiled client built here on demand
(cargo, under $CARGO_TARGET_DIR or target/, in forge-client/; --forge-client BIN takes a build): 8 threads that
each time a request from its write to its whole answer read, with no interpreter between them and the servers.
--client python does the same with Python threads in this process, which share one GIL, and as the harness did
before: both clients replay the same plan, drawn here first. --daemon-log PREFIX keeps the daemon's JSON log of
each repository count in PREFIX-<repos>.jsonl: one line per connection with its duration_ms, and open_ms for a
connection that opened its repository.

The repositories are hard-linked copies (`cp -al`, so the page cache holds each pack once) of a few sources:
git.git (--source), and small repositories made here with 1, 3 and 6 packs, one of them with a
multi-pack-index. Each client thread opens --connections connections in turn, each to a repository drawn with
Zipf(1.1) popularity (seeded), and sends --requests requests as Gitaly does: `contents <id>` and `info <id>`,
each followed by `flush`, reading each answer before the next; every fifth connection is a `--batch-check`
instead. By default each client opens its next connection as soon as the last one ends (a closed loop, so every
way runs the machine's cores flat out, and its p99 is mostly a wait for a core); --rate R opens connections at
Poisson arrival times, R requests/s in all, the same for every way. The floor runs first; the pool and the
daemon alternate (which goes first swaps each repository count); each way is checked to give the same bytes as
the others for the first connections.

Reported per way: requests/s, p50 and p99 per request, the most processes alive at once, and memory: the summed
PSS of every process of that way (so pages shared through the page cache count once; the clients' own not
counted), sampled every 0.2 s, the peak; then p50 and p99 of the first request of each connection and of the
others, and how busy the machine's cores were (all processes, this harness's and any other's) while the way ran;
and per request, the mean time the client's threads and the server's (not the pool's git processes) spent
runnable but waiting for a core (schedstat). Then the ratios daemon / pool, and the floor's p99 against each.
"""
import argparse
import os
import random
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

MAGIC = b"\0cat-blobd connect 3\n"
CWD_FD = -1


def sh(*args, cwd=None, stdin=None):
    return subprocess.run(args, cwd=cwd, check=True, input=stdin, stdout=subprocess.PIPE).stdout


def make_sources(git, work, source):
    """The repositories to copy: git.git, and three small ones with 1, 3 and 6 packs (the last with a midx)."""
    sources = [source]
    env = dict(os.environ, GIT_AUTHOR_DATE="1112911993 -0700", GIT_COMMITTER_DATE="1112911993 -0700",
               GIT_AUTHOR_NAME="A", GIT_AUTHOR_EMAIL="a@example.com", GIT_COMMITTER_NAME="C",
               GIT_COMMITTER_EMAIL="c@example.com")
    for packs in (1, 3, 6):
        repo = os.path.join(work, "sources", "small-%d" % packs)
        subprocess.run([git, "init", "-q", repo], check=True, env=env)
        for p in range(packs):
            for f in range(40):
                with open(os.path.join(repo, "f%d" % f), "w") as out:
                    out.write(("pack %d file %d\n" % (p, f)) * (1 + f * 7))
            subprocess.run([git, "-C", repo, "add", "-A"], check=True, env=env)
            subprocess.run([git, "-C", repo, "commit", "-qm", "c%d" % p], check=True, env=env)
            subprocess.run([git, "-C", repo, "repack", "-q", "-d"], check=True, env=env)
        if packs == 6:
            subprocess.run([git, "-C", repo, "multi-pack-index", "write"], check=True, env=env)
        sources.append(os.path.join(repo, ".git"))
    return sources


def sample_ids(git, repo, count, rng):
    out = sh(git, "--git-dir=" + repo, "cat-file", "--batch-all-objects", "--unordered",
             "--batch-check=%(objecttype) %(objectname)")
    ids = [line.split(b" ")[1] for line in out.splitlines() if line.startswith((b"blob ", b"tree ", b"commit "))]
    rng.shuffle(ids)
    return ids[:count]


def populate(root, sources, n):
    """n bare repositories under root, hard-linked copies of the sources in turn: (path, source index)."""
    repos = []
    for i in range(n):
        src = i % len(sources)
        path = os.path.join(root, "@hashed", "%02x" % (i % 256), "%06d.git" % i)
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            subprocess.run(["cp", "-al", sources[src], path], check=True)
        repos.append((path, src))
    return repos


def zipf_picker(n, rng, s=1.1):
    weights = [1.0 / (k + 1) ** s for k in range(n)]
    order = list(range(n))
    rng.shuffle(order)
    cum, total = [], 0.0
    for w in weights:
        total += w
        cum.append(total)

    def pick():
        import bisect
        return order[bisect.bisect_left(cum, rng.random() * total)]
    return pick


def read_answer(f, check_only):
    """One answer of cat-file: `<id> <type> <size>\\n[<bytes>\\n]` or `<name> missing\\n`."""
    header = f.readline()
    parts = header.split()
    if check_only or len(parts) != 3:
        return header
    return header + f.read(int(parts[2]) + 1)


class Pool:
    """Gitaly's catfile cache, in spirit: processes by repository, one user at a time, LRU past max, TTL."""

    def __init__(self, git, max_kept, ttl):
        self.git, self.max_kept, self.ttl = git, max_kept, ttl
        self.lock = threading.Lock()
        self.idle = {}  # (repo, check) -> list of (proc, last_used)
        self.alive = set()
        self.most = 0

    def checkout(self, repo, check):
        with self.lock:
            self.expire()
            procs = self.idle.get((repo, check))
            if procs:
                return procs.pop()[0]
        mode = ["--batch-check"] if check else ["--batch-command", "--buffer"]
        proc = subprocess.Popen([self.git, "--git-dir=" + repo, "cat-file"] + mode,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        with self.lock:
            self.alive.add(proc)
            self.most = max(self.most, len(self.alive))
        return proc

    def checkin(self, repo, check, proc):
        with self.lock:
            self.idle.setdefault((repo, check), []).append((proc, time.monotonic()))
            kept = sorted(((t, key, p) for key, ps in self.idle.items() for p, t in ps), key=lambda x: x[0])
            while len(kept) > self.max_kept:
                _, key, p = kept.pop(0)
                self.close(key, p)

    def expire(self):
        now = time.monotonic()
        for key, ps in list(self.idle.items()):
            for p, t in list(ps):
                if now - t > self.ttl:
                    self.close(key, p)

    def close(self, key, proc):
        self.idle[key] = [(p, t) for p, t in self.idle[key] if p is not proc]
        proc.stdin.close()
        proc.wait()
        self.alive.discard(proc)

    def pids(self):
        with self.lock:
            return [p.pid for p in self.alive]

    def shutdown(self):
        with self.lock:
            for key, ps in list(self.idle.items()):
                for p, _ in list(ps):
                    self.close(key, p)


def connect_daemon(sock_path, repo, check):
    """A `cat-blobd connect` in Python: our pipes and the repository's directory passed to the daemon."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    cwd = os.open(repo, os.O_PATH | os.O_DIRECTORY)
    args = [b"cat-file", b"--batch-check"] if check else [b"cat-file", b"--batch-command", b"--buffer"]
    hello = MAGIC + struct.pack("<B", 4) + struct.pack("<4i", 0, 1, 2, CWD_FD) + struct.pack("<I", 0o022)
    hello += struct.pack("<I", len(args)) + b"".join(struct.pack("<I", len(a)) + a for a in args)
    hello += struct.pack("<I", 0)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    for attempt in range(1000):
        try:
            conn.connect(sock_path)
            break
        except (ConnectionRefusedError, FileNotFoundError):
            # The daemon is between creating its socket and listening on it.
            time.sleep(0.01)
    socket.send_fds(conn, [hello], [in_r, out_w, 2, cwd])
    for fd in (in_r, out_w, cwd):
        os.close(fd)
    return conn, os.fdopen(in_w, "wb"), os.fdopen(out_r, "rb")


def one_connection(way, ctx, repo, ids, check, latencies, outputs):
    if way == "pool":
        proc = ctx.checkout(repo, check)
        stdin, stdout = proc.stdin, proc.stdout
    else:
        conn, stdin, stdout = connect_daemon(ctx, repo, check)
    got = []
    for i, oid in enumerate(ids):
        line = oid + b"\n" if check else (b"contents " if i % 2 == 0 else b"info ") + oid + b"\nflush\n"
        start = time.perf_counter()
        stdin.write(line)
        stdin.flush()
        got.append(read_answer(stdout, check or i % 2 == 1))
        latencies.append((i == 0, time.perf_counter() - start))
    if outputs is not None:
        outputs.append(b"".join(got))
    if way == "pool":
        ctx.checkin(repo, check, proc)
    else:
        stdin.close()
        stdout.read()
        reply = conn.recv(64)
        conn.close()
        assert reply == b"exit 0\n", reply


def pss(pids):
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/smaps_rollup" % pid) as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def make_plan(repos, ids_by_source, args, seed):
    """What each client thread does, drawn before anything runs (each thread's own seeded generator, as the
    clients drew it themselves before): per client, its connections as (repository, check, ids, keep, at), `at`
    the seconds after the start before which the connection does not open: 0 in a closed loop, and with --rate
    a Poisson arrival (drawn from a generator of its own, so the repositories and ids are the same either way)."""
    plan = []
    for k in range(args.clients):
        rng = random.Random(seed * 1000 + k)
        arrivals = random.Random(seed * 1000 + k + 500)
        per_second = args.rate / (args.clients * args.requests) if args.rate else None
        pick = zipf_picker(len(repos), rng)
        conns, at = [], 0.0
        for c in range(args.connections):
            repo, src = repos[pick()]
            ids = rng.sample(ids_by_source[src], args.requests)
            if per_second:
                at += arrivals.expovariate(per_second)
            conns.append((repo, c % 5 == 4, ids, k == 0 and c < 5, at))
        plan.append(conns)
    return plan


def write_plan(plan, path):
    with open(path, "wb") as out:
        for conns in plan:
            out.write(b"client\n")
            for repo, check, ids, keep, at in conns:
                out.write(b"conn %d %d %d %d %s\n" % (check, keep, int(at * 1e6), len(ids), os.fsencode(repo)))
                out.write(b"".join(oid + b"\n" for oid in ids))


class Sampler:
    """The peak of the summed PSS of pids_of(), and of their count, sampled every 0.2 s until stop()."""

    def __init__(self, pids_of):
        self.pids_of, self.pss, self.procs = pids_of, 0, 0
        self.cpu = cpu_times()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        while not self.done.wait(0.2):
            self.once()

    def once(self):
        pids = self.pids_of()
        self.pss = max(self.pss, pss(pids))
        self.procs = max(self.procs, len(pids))

    def stop(self):
        busy, total = (b - a for a, b in zip(self.cpu, cpu_times()))
        self.busy = busy / max(total, 1)
        self.done.set()
        self.thread.join()
        # A way done within the first 0.2 s (the daemon, on a quiet machine) is sampled once, at its end, not never.
        self.once()


def cpu_times():
    """The whole machine's CPU time so far, busy and in all (/proc/stat's first line, in ticks): while a way
    runs, how busy its cores were tells queueing for a core (a closed loop on 2 cores) from waiting on a server."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    idle = ticks[3] + ticks[4]
    return sum(ticks) - idle, sum(ticks)


def runq_wait_ns(tasks):
    """Nanoseconds the tasks (/proc/<task>/schedstat's second field) waited on a run queue for a core."""
    total = 0
    for task in tasks:
        try:
            with open("/proc/%s/schedstat" % task) as f:
                total += int(f.read().split()[1])
        except OSError:
            pass
    return total


def server_waits(pid):
    """Per thread of the server: (its name, nanoseconds it has waited for a core)."""
    waits = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                waits[tid] = (f.read().strip(), runq_wait_ns(["%d/task/%s" % (pid, tid)]))
        except OSError:
            pass
    return waits


def server_wait_by_name(before, after):
    """The wait of each thread alive at the end since the start, summed by thread name. A thread that came and
    went in between (a connection's own, if the server starts any) is not counted: a lower bound."""
    by_name = {}
    for tid, (name, wait) in after.items():
        by_name[name] = by_name.get(name, 0) + wait - before.get(tid, (name, 0))[1]
    return by_name


def children(pid):
    """The processes whose parent is pid (the compiled client's `git cat-file`s): /proc/PID/task/*/children
    needs CONFIG_PROC_CHILDREN, which this machine's kernel lacks, so every /proc/N/stat is read."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name, "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat[stat.rindex(b")") + 2:].split()[1]) == pid:
                found.append(int(name))
    return found


def run_python(way, ctx, plan, pids_of):
    """The plan replayed by Python threads in this process: returns (tagged latencies, wall, outputs, peak)."""
    latencies, outputs, waits = [], [], []

    def client(conns):
        for repo, check, ids, keep, at in conns:
            wait = start + at - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            one_connection(way, ctx, repo, ids, check, latencies, outputs if keep else None)
        waits.append(runq_wait_ns(["thread-self"]))

    sampler = Sampler(pids_of)
    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(conns,)) for conns in plan]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    sampler.stop()
    sampler.client_wait = sum(waits)
    return latencies, wall, b"".join(outputs), sampler


def run_rust(way, plan, args, work, sock):
    """The plan replayed by benches/forge-client (`pool`, or `daemon` over sock, which is the floor's too)."""
    out = os.path.join(work, "client-out")
    os.makedirs(out, exist_ok=True)
    plan_path = os.path.join(work, "plan")
    write_plan(plan, plan_path)
    cmd = [args.forge_client, "run", "--plan", plan_path, "--out", out, "--git", args.git,
           "--pool-max", str(args.pool_max), "--ttl", str(args.ttl)]
    cmd += ["--way", "pool"] if way == "pool" else ["--way", "daemon", "--socket", sock]
    client = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    sampler = Sampler(lambda: children(client.pid) if way == "pool" else [args.server_pid])
    # "done" once every request is answered; the pool's processes live on until our stdin closes, so that the
    # last sample sees them, as it sees the Python pool's.
    said = client.stdout.readline()
    sampler.stop()
    client.stdin.close()
    if client.wait() != 0 or said != b"done\n":
        sys.exit("forge-client failed (%d)" % client.returncode)
    with open(os.path.join(out, "latencies")) as f:
        latencies = [(first == "1", int(ns) / 1e9) for first, ns in (line.split() for line in f)]
    summary = dict(line.split() for line in open(os.path.join(out, "summary")))
    with open(os.path.join(out, "kept"), "rb") as f:
        kept = f.read()
    sampler.procs = max(sampler.procs, int(summary["most"]))
    sampler.client_wait = int(summary["runq_wait_ns"])
    return latencies, float(summary["wall_s"]), kept, sampler


def percentile(sorted_values, q):
    return sorted_values[int(len(sorted_values) * q)] * 1e3 if sorted_values else float("nan")


def summarize(latencies, wall, sampler):
    every = sorted(t for _, t in latencies)
    first = sorted(t for f, t in latencies if f)
    rest = sorted(t for f, t in latencies if not f)
    return {
        "rps": len(every) / wall,
        "p50": percentile(every, 0.5),
        "p99": percentile(every, 0.99),
        "first_p50": percentile(first, 0.5),
        "first_p99": percentile(first, 0.99),
        "rest_p50": percentile(rest, 0.5),
        "rest_p99": percentile(rest, 0.99),
        "procs": sampler.procs,
        "pss": sampler.pss,
        "busy": sampler.busy,
        "client_wait_us": sampler.client_wait / 1e3 / len(every),
        "server_wait_us": {name: ns / 1e3 / len(every) for name, ns in sampler.server_wait.items()},
    }


def run_way(way, args, plan, root, work, answers):
    """One way: its server started (daemon, floor), the plan replayed by the chosen client, the server stopped."""
    server, log = None, subprocess.DEVNULL
    sock = os.path.join(work, way + ".sock")
    if way == "daemon":
        if args.daemon_log:
            log = open("%s-%d.jsonl" % (args.daemon_log, args.n), "wb")
        server = subprocess.Popen([args.cat_blobd, "serve", "--socket", sock, "--root", root, "--memory-budget",
                                   args.memory_budget, "--log-format", "json"], stderr=log)
    elif way == "floor":
        server = subprocess.Popen([args.forge_client, "floor", "--socket", sock, "--answers", answers])
    if server:
        while not os.path.exists(sock):
            time.sleep(0.01)
        args.server_pid = server.pid
        server_wait = server_waits(server.pid)
    pool = Pool(args.git, args.pool_max, args.ttl) if way == "pool" else None
    if args.client == "rust":
        latencies, wall, kept, sampler = run_rust(way, plan, args, work, sock)
    else:
        ctx, pids_of = (pool, pool.pids) if pool else (sock, lambda: [server.pid])
        latencies, wall, kept, sampler = run_python("pool" if pool else "daemon", ctx, plan, pids_of)
    if pool:
        pool.shutdown()
        sampler.procs = max(sampler.procs, pool.most)
    sampler.server_wait = {}
    if server:
        sampler.server_wait = server_wait_by_name(server_wait, server_waits(server.pid))
        server.terminate()
        server.wait()
        if log is not subprocess.DEVNULL:
            log.close()
    return summarize(latencies, wall, sampler), kept


def write_answers(git, sources, ids_by_source, path):
    """Every sampled object's `git cat-file --batch` answer, for the floor to serve from memory."""
    with open(path, "wb") as out:
        for source, ids in zip(sources, ids_by_source):
            out.write(sh(git, "--git-dir=" + source, "cat-file", "--batch",
                         stdin=b"".join(oid + b"\n" for oid in ids)))


def build_client(args):
    """benches/forge-client, a release build under <target>/forge-client/."""
    if args.forge_client:
        return args.forge_client
    here = os.path.dirname(os.path.abspath(__file__))
    target = os.path.join(os.environ.get("CARGO_TARGET_DIR") or os.path.join(os.path.dirname(here), "target"),
                          "forge-client")
    subprocess.run(["cargo", "build", "--release", "--quiet", "--manifest-path",
                    os.path.join(here, "forge-client", "Cargo.toml")], check=True,
                   env=dict(os.environ, CARGO_TARGET_DIR=target))
    return os.path.join(target, "release", "forge-client")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repos", default="100,1000,10000")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--connections", type=int, default=400)
    ap.add_argument("--requests", type=int, default=10)
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--pool-max", type=int, default=100)
    ap.add_argument("--ttl", type=float, default=10.0)
    ap.add_argument("--source", default="/work/.mirror/git+git/repo")
    ap.add_argument("--git", default=shutil.which("git"))
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--cat-blobd", default=os.path.join(here, "target", "release", "cat-blobd"))
    ap.add_argument("--memory-budget", default="1g")
    ap.add_argument("--daemon-log", help="keep the daemon's JSON log in PREFIX-<repos>.jsonl")
    ap.add_argument("--client", choices=("rust", "python"), default="rust",
                    help="who sends the requests: benches/forge-client (compiled) or Python threads here")
    ap.add_argument("--ways", default="floor,pool,daemon",
                    help="of floor, pool, daemon (floor: benches/forge-client answering from memory)")
    ap.add_argument("--rate", type=float,
                    help="requests/s offered in all, as Poisson arrivals of connections (else a closed loop)")
    ap.add_argument("--forge-client", help="a build of benches/forge-client (else built here)")
    args = ap.parse_args()
    ways = args.ways.split(",")
    if args.client == "rust" or "floor" in ways:
        args.forge_client = build_client(args)
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="cat-blobd-forge-")
    try:
        sources = make_sources(args.git, work, args.source)
        ids_by_source = [sample_ids(args.git, s, 2000, rng) for s in sources]
        answers = os.path.join(work, "answers")
        if "floor" in ways:
            write_answers(args.git, sources, ids_by_source, answers)
        root = os.path.join(work, "root")
        print("client: %s" % args.client)
        print("way      repos   req/s     p50_ms   p99_ms   procs  pss_MiB   1st_p50  1st_p99  rest_p50 rest_p99"
              "  busy")
        for r, n in enumerate(int(x) for x in args.repos.split(",")):
            args.n = n
            repos = populate(root, sources, n)
            plan = make_plan(repos, ids_by_source, args, args.seed + r)
            results, outputs = {}, {}
            # The floor touches no repository: first. The pool and the daemon swap places each repository count.
            order = ["pool", "daemon"] if r % 2 == 0 else ["daemon", "pool"]
            for way in [w for w in ["floor"] + order if w in ways]:
                results[way], outputs[way] = run_way(way, args, plan, root, work, answers)
            kept = set(outputs.values())
            assert len(kept) == 1, "the ways gave different bytes"
            for way in [w for w in ("floor", "pool", "daemon") if w in results]:
                res = results[way]
                print("%-7s %6d %8.0f %9.3f %8.3f %7d %8.1f %9.3f %8.3f %9.3f %8.3f %4.0f%%"
                      % (way, n, res["rps"], res["p50"], res["p99"], res["procs"], res["pss"] / 2**20,
                         res["first_p50"], res["first_p99"], res["rest_p50"], res["rest_p99"], res["busy"] * 100))
            print("run-queue wait per request, client / server threads (µs, means): " + ", ".join(
                "%s %.1f / %s" % (w, results[w]["client_wait_us"], "%.1f" % sum(results[w]["server_wait_us"].values())
                                  if results[w]["server_wait_us"] else "-")
                for w in ("floor", "pool", "daemon") if w in results))
            if results.get("daemon", {}).get("server_wait_us"):
                print("  the daemon's by thread name: " + ", ".join(
                    "%s %.1f" % kv for kv in sorted(results["daemon"]["server_wait_us"].items(), key=lambda kv: -kv[1])
                    if kv[1] >= 0.05))
            if "pool" in results and "daemon" in results:
                p, d = results["pool"], results["daemon"]
                print("daemon / pool at %d repositories: memory %.2fx, p99 %.2fx, p50 %.2fx, throughput %.2fx"
                      % (n, d["pss"] / max(p["pss"], 1), d["p99"] / p["p99"], d["p50"] / p["p50"],
                         d["rps"] / p["rps"]))
            if "floor" in results:
                f = results["floor"]
                print("floor's p99 at %d repositories: %s" % (n, ", ".join(
                    "%.2fx the %s's" % (f["p99"] / results[w]["p99"], w) for w in ("pool", "daemon")
                    if w in results)))
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
