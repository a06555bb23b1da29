#!/usr/bin/env python3
"""One repository, one client, one request at a time (issue 29): what a request costs a `--root` daemon against a
warm `git cat-file --batch-command --buffer` on the same repository, with nothing else running.

    benches/warm-request.py [--repo /work/.mirror/git+git/repo] [--root DIR] [--requests 2000] [--rounds 5]
                            [--kinds contents,info] [--seed 29] [--git GIT] [--cat-blobd BIN [BIN ...]]
                            [--per-connection N] [--daemon-arg=ARG ...] [--hold SECONDS]

Each round runs every way in turn (git, then each --cat-blobd binary, so a before and an after can run side by
side; the order rotates every round). A way sends the --requests requests as Gitaly and forge-node.py do:
`contents <id>` or `info <id>` (alternating, or only the --kinds given), each followed by `flush`, writing one
and reading its whole answer before the next; first once untimed, then timed. The ids are drawn (seeded) from the
repository's blobs, trees and commits. git is one `git cat-file` process for the whole round, as a pool keeps it.
The daemon runs `serve --root` (--root defaults to the repository's parent directory) and is reached the way
forge-node.py reaches it (the `connect` hello and the pipes passed over the socket):
  - by default on one connection for the whole round: a request to an open repository whose delta-base cache
    and pages are warm, nothing but the request path;
  - with --per-connection N, on a new connection every N requests (10 is forge-node.py's), one after the other:
    each connection finds the repository idle, as most of a forge node's connections do (its cache emptied and
    its pages released when the previous client left). The first request of each connection is reported apart
    (`first`), the others as `later`.

Reported per way: p50, p90 and p99 per request over all rounds (all, per kind, first/later), then each daemon's
ratio to git. --daemon-arg passes one more argument to `serve` (e.g. --daemon-arg=--memory-budget=8g).
--hold SECONDS keeps the first daemon's first connection busy, untimed, for that long in the last round and
prints the daemon's pid first: time for `perf record -g -p PID` or `strace -f -c -p PID` to attach.
"""
import argparse
import importlib.util
import os
import random
import shutil
import subprocess
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("forge_node", os.path.join(here, "forge-node.py"))
forge = importlib.util.module_from_spec(spec)
spec.loader.exec_module(forge)


def requests_for(ids, kinds):
    return [(kinds[i % len(kinds)], oid) for i, oid in enumerate(ids)]


def session(stdin, stdout, requests, timed):
    """Sends each request, waits for its whole answer; returns (kind, seconds) per request if timed."""
    out = []
    for kind, oid in requests:
        line = kind.encode() + b" " + oid + b"\nflush\n"
        start = time.perf_counter()
        stdin.write(line)
        stdin.flush()
        answer = forge.read_answer(stdout, kind == "info")
        if timed:
            out.append((kind, time.perf_counter() - start))
        assert not answer.endswith(b" missing\n"), answer
    return out


def git_way(git, repo, requests):
    proc = subprocess.Popen([git, "--git-dir=" + repo, "cat-file", "--batch-command", "--buffer"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    session(proc.stdin, proc.stdout, requests, False)
    got = session(proc.stdin, proc.stdout, requests, True)
    proc.stdin.close()
    proc.wait()
    return got


def daemon_connection(sock, repo, passes, hold=0.0):
    """One connection to the daemon: each (requests, timed) pass in turn, after `hold` seconds of untimed
    passes; returns what the timed passes measured."""
    conn, stdin, stdout = forge.connect_daemon(sock, repo, False)
    end = time.monotonic() + hold
    while time.monotonic() < end:
        session(stdin, stdout, passes[0][0], False)
    got = []
    for requests, timed in passes:
        got += session(stdin, stdout, requests, timed)
    stdin.close()
    stdout.read()
    reply = conn.recv(64)
    conn.close()
    assert reply == b"exit 0\n", reply
    return got


def daemon_way(sock, repo, requests, hold, per_connection):
    """The same requests through the daemon: on one connection (warm-up pass, then the timed one), or on a new
    connection every per_connection requests (a pool's `git cat-file` outlives its clients; a daemon's
    connection does not), the first request of each labelled `first`."""
    if not per_connection:
        return daemon_connection(sock, repo, [(requests, False), (requests, True)], hold)
    got = []
    for timed in (False, True):
        for start in range(0, len(requests), per_connection):
            answered = daemon_connection(sock, repo, [(requests[start:start + per_connection], timed)],
                                         hold if (timed and start == 0) else 0.0)
            got += [("first", t) if i == 0 else (k, t) for i, (k, t) in enumerate(answered)]
    return got


def quantiles(values):
    values = sorted(values)
    pick = lambda q: values[min(len(values) - 1, int(len(values) * q))] * 1e3
    return pick(0.5), pick(0.9), pick(0.99)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default="/work/.mirror/git+git/repo")
    ap.add_argument("--root", help="the daemon's --root (default: the repository's parent directory)")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--kinds", default="contents,info")
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--git", default=shutil.which("git"))
    default_bin = os.path.join(os.path.dirname(here), "target", "release", "cat-blobd")
    ap.add_argument("--cat-blobd", nargs="+", default=[default_bin])
    ap.add_argument("--hold", type=float, default=0.0, help="seconds of untimed load for a profiler to attach")
    ap.add_argument("--per-connection", type=int, default=0,
                    help="a new daemon connection every N requests (git keeps its one process, as a pool does)")
    ap.add_argument("--daemon-arg", action="append", default=[], help="one more argument to `serve`, repeatable")
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    root = os.path.abspath(args.root or os.path.dirname(repo))
    kinds = args.kinds.split(",")
    ids = forge.sample_ids(args.git, repo, args.requests, random.Random(args.seed))
    requests = requests_for(ids, kinds)
    work = tempfile.mkdtemp(prefix="cat-blobd-warm-")
    daemons, ways = [], ["git"]
    try:
        for n, binary in enumerate(args.cat_blobd):
            sock = os.path.join(work, "d%d.sock" % n)
            command = [binary, "serve", "--socket", sock, "--root", root] + args.daemon_arg
            daemons.append(subprocess.Popen(command, stderr=subprocess.DEVNULL))
            while not os.path.exists(sock):
                time.sleep(0.01)
            ways.append(("daemon %d" % n, sock))
        if args.hold:
            print("daemon 0 pid %d: holding %.0f s before the last round" % (daemons[0].pid, args.hold), flush=True)
        results = {way if way == "git" else way[0]: [] for way in ways}
        for r in range(args.rounds):
            order = ways[r % len(ways):] + ways[:r % len(ways)]
            for way in order:
                if way == "git":
                    results["git"] += git_way(args.git, repo, requests)
                else:
                    hold = args.hold if (way[0] == "daemon 0" and r == args.rounds - 1) else 0
                    results[way[0]] += daemon_way(way[1], repo, requests, hold, args.per_connection)
        print("load: %s" % open("/proc/loadavg").read().split()[:3])
        for n, binary in enumerate(args.cat_blobd):
            print("daemon %d: %s" % (n, binary))
        print("%-9s %-9s %8s %8s %8s" % ("way", "kind", "p50_ms", "p90_ms", "p99_ms"))
        for name, got in results.items():
            split = any(k == "first" for k, _ in got)
            for kind in ["all"] + kinds + (["first", "later"] if split else []):
                values = [t for k, t in got if kind in ("all", k) or (kind == "later" and k != "first")]
                if not values:
                    continue
                print("%-9s %-9s %8.4f %8.4f %8.4f" % ((name, kind) + quantiles(values)))
        git_q = quantiles([t for _, t in results["git"]])
        for name, got in results.items():
            if name != "git":
                q = quantiles([t for _, t in got])
                print("%s / git: p50 %.2fx, p90 %.2fx, p99 %.2fx" % (name, q[0] / git_q[0], q[1] / git_q[1],
                                                                  q[2] / git_q[2]))
    finally:
        for daemon in daemons:
            daemon.terminate()
            daemon.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
