#!/usr/bin/env python3
"""Write-through bench: a history-rewrite-shaped stream through git fast-import alone and through cat-blobd.

usage: benches/write_through.py <repository> [cat-blobd binary] [runs]

The stream is `git fast-export --all` of the repository with, inside each commit, one `cat-blob` of each
modified file's previous version (the way a tool that diffs old against new would). Each run imports it into a
fresh bare repository whose alternates reach the source's objects; the totals of both are printed from the same
run, with a check that both wrote the same refs.
"""
import os
import re
import subprocess
import sys
import tempfile
import time


def rewrite_stream(repo):
    export = subprocess.run(["git", "-C", repo, "fast-export", "--all", "--reencode=no", "--signed-tags=strip"],
                            check=True, capture_output=True).stdout
    out, last = bytearray(), {}
    pos = 0
    modify = re.compile(rb"M [0-7]+ (:\d+|[0-9a-f]{40,64}) (.*)")
    while pos < len(export):
        end = export.index(b"\n", pos) + 1
        line = export[pos:end]
        pos = end
        if line.startswith(b"data "):
            size = int(line[5:-1])
            out += line + export[pos:pos + size]
            pos += size
            continue
        match = modify.match(line[:-1])
        if match:
            ref, path = match.groups()
            if path in last:
                out += b"cat-blob " + last[path] + b"\n"
            last[path] = ref
        out += line
    return bytes(out)


def run(program, stream, source):
    with tempfile.TemporaryDirectory() as scratch:
        repo = os.path.join(scratch, "r.git")
        subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
        with open(os.path.join(repo, "objects/info/alternates"), "w") as alternates:
            common = subprocess.run(["git", "-C", source, "rev-parse", "--git-common-dir"], check=True,
                                    capture_output=True, text=True).stdout.strip()
            alternates.write(os.path.join(os.path.abspath(os.path.join(source, common)), "objects") + "\n")
        env = dict(os.environ, GIT_DIR=repo)
        started = time.perf_counter()
        done = subprocess.run(program + ["--quiet"], input=stream, env=env, cwd=repo, capture_output=True)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"{program[0]} failed: {done.stderr.decode(errors='replace')}")
        refs = subprocess.run(["git", "for-each-ref"], env=env, check=True, capture_output=True).stdout
        return elapsed, done.stdout, refs


def main():
    source = sys.argv[1]
    cat_blobd = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "target/release/cat-blobd")
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    stream = rewrite_stream(source)
    reads, commits = stream.count(b"\ncat-blob "), stream.count(b"\ncommit ")
    print(f"stream: {len(stream)} bytes, {commits} commits, {reads} cat-blob reads")
    for _ in range(runs):
        git_time, git_out, git_refs = run(["git", "fast-import"], stream, source)
        ours_time, ours_out, ours_refs = run([cat_blobd], stream, source)
        assert git_out == ours_out and git_refs == ours_refs, "cat-blobd and git differ"
        print(f"git fast-import {git_time:.3f} s   cat-blobd write-through {ours_time:.3f} s")


if __name__ == "__main__":
    main()
