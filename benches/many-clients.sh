#!/usr/bin/env bash
# Many clients at once through one daemon (issue 22): K clients, started together, each reading N random blobs
# of the repository (distinct sets: client k takes the k-th slice of the blob list shuffled with a fixed seed),
#   (a) cat-file   K `cat-blobd connect --socket S cat-file --batch --buffer < ids_k | wc -c` to one running
#                  `cat-blobd serve`, against K `git --git-dir REPO cat-file --batch --buffer < ids_k | wc -c`
#   (b) fastimport K `cat-blobd connect --socket S --quiet < cat-blob-requests_k | wc -c` to the same daemon,
#                  against K `git fast-import --quiet --cat-blob-fd=1 | wc -c`, each in its own throwaway bare
#                  repository whose objects/info/alternates points at REPO/objects (fast-import writes into its
#                  repository)
# R rounds, the two sides alternating (which goes first swaps every round); for each round: the wall time of the
# whole batch (all K started together, until the last ends) and the total memory, the sum of the peak RSS of
# every process involved: each git's or connect's max RSS (`/usr/bin/time -f %M`), plus for cat-blobd the
# daemon's VmHWM from /proc/PID/status read after the round. VmHWM is a high-water mark over the daemon's whole
# life (warm-up and every earlier round included), not over the round alone. `wc -c` is left out on both sides.
# RSS counts the pack's pages mapped from the (shared) page cache in every process that touched them, so the sum
# over K gits counts them K times and the daemon's once (benches/README.md has the split measured on git.git).
# Then the medians and the ratios git / cat-blobd.
#   (c) latency    one request at a time through the warm daemon: send one id (`connect … cat-file --batch`) or
#                  one `cat-blob <id>` (`connect … --quiet`), read the whole reply (header, then its size in
#                  bytes and the newline), then the next; against `git cat-file --batch` and
#                  `git fast-import --quiet --cat-blob-fd=1` driven the same way. LAT blobs of at most 16 KiB,
#                  after 20 warm-up requests, the four ways interleaved request by request; p50 and p99.
#
#   benches/many-clients.sh [REPO] [K] [N] [R]
#
# REPO defaults to /work/.mirror/git+git/repo (a bare clone of git.git), K to 8, N to 5000, R to 3.
# GIT=path picks git (default /work/git-src/v2.55.0/git if it exists, else `git` on PATH); CAT_BLOBD=path the
# binary (default: target/release/cat-blobd of this checkout, built if missing); LAT the latency count (1000).
# Every client's byte count is checked to be the same through cat-blobd as through git, and client 0's whole
# output is compared byte for byte once before timing.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "${1:-/work/.mirror/git+git/repo}" && pwd)
clients=${2:-8}
count=${3:-5000}
rounds=${4:-3}
latency=${LAT:-1000}
if [ -z "${GIT:-}" ]; then
    if [ -x /work/git-src/v2.55.0/git ]; then GIT=/work/git-src/v2.55.0/git; else GIT=$(type -P git); fi
fi
if [ -z "${CAT_BLOBD:-}" ]; then
    CAT_BLOBD=$here/target/release/cat-blobd
    [ -x "$CAT_BLOBD" ] || (cd "$here" && cargo build --release --quiet --bin cat-blobd)
fi
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
unset GIT_DIR GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES

. "$(dirname "$0")/workdir.sh" many-clients

# The inputs: ids.k (bare ids) and requests.k (`cat-blob <id>`) per client, warmup (100 ids), small (latency).
"$GIT" --git-dir "$repo" cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype) %(objectsize)' \
    | awk '$2 == "blob" { print $1, $3 }' >"$work/blobs"
python3 - "$work" "$clients" "$count" "$latency" <<'PY'
import random, sys
work, clients, count, latency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
blobs = [line.split() for line in open(f"{work}/blobs")]
if clients * count + 100 > len(blobs):
    sys.exit(f"{len(blobs)} blobs: too few for {clients} clients of {count} and 100 for the warm-up")
order = list(range(len(blobs)))
random.Random(22).shuffle(order)
for k in range(clients):
    ids = [blobs[i][0] for i in order[k * count:(k + 1) * count]]
    open(f"{work}/ids.{k}", "w").write("".join(f"{i}\n" for i in ids))
    open(f"{work}/requests.{k}", "w").write("".join(f"cat-blob {i}\n" for i in ids))
warmup = [blobs[i][0] for i in order[clients * count:clients * count + 100]]
open(f"{work}/warmup", "w").write("".join(f"{i}\n" for i in warmup))
small = [oid for oid, size in blobs if int(size) <= 16384]
small = random.Random(5).sample(small, min(len(small), latency + 20))
open(f"{work}/small", "w").write("".join(f"{i}\n" for i in small))
PY

for k in $(seq 0 $((clients - 1))); do
    "$GIT" init -q --bare --template= "$work/fi.$k.git"
    mkdir -p "$work/fi.$k.git/objects/info"
    echo "$repo/objects" >"$work/fi.$k.git/objects/info/alternates"
done

"$CAT_BLOBD" serve --socket "$work/socket" --git-dir "$repo" 2>"$work/daemon.log" &
daemon_pid=$!
for _ in $(seq 200); do [ -S "$work/socket" ] && break; sleep 0.05; done
[ -S "$work/socket" ] || { cat "$work/daemon.log" >&2; exit 1; }
# The daemon's warm-up (one small stream), and git's the same way, so that both start from a warm page cache.
"$CAT_BLOBD" connect --socket "$work/socket" cat-file --batch --buffer <"$work/warmup" >/dev/null
"$GIT" --git-dir "$repo" cat-file --batch --buffer <"$work/warmup" >/dev/null

# One client of each way, `client WAY K`: sets `input` and `argv`, the measured process (stdin: the input;
# stdout: what `wc -c` counts). `env` execs the command in place, so /usr/bin/time measures the command itself.
client() {
    case $1 in
    cb-cat-file) input=ids.$2 argv=("$CAT_BLOBD" connect --socket "$work/socket" cat-file --batch --buffer) ;;
    git-cat-file) input=ids.$2 argv=("$GIT" --git-dir "$repo" cat-file --batch --buffer) ;;
    cb-fast-import) input=requests.$2 argv=("$CAT_BLOBD" connect --socket "$work/socket" --quiet) ;;
    git-fast-import) input=requests.$2 argv=(env "GIT_DIR=$work/fi.$2.git" "$GIT" fast-import --quiet --cat-blob-fd=1) ;;
    esac
}

# Same bytes through the daemon as through git, for client 0, before any timing.
for mode in cat-file fast-import; do
    client "git-$mode" 0
    "${argv[@]}" <"$work/$input" >"$work/expected"
    client "cb-$mode" 0
    "${argv[@]}" <"$work/$input" >"$work/got"
    cmp -s "$work/expected" "$work/got" || { echo "$mode: client 0 differs from git" >&2; exit 1; }
done
rm -f "$work/expected" "$work/got"

# `batch WAY`: start the K clients together, wait for all; prints "wall_s mem_kib daemon_kib" (daemon_kib: the
# daemon's VmHWM, included in mem_kib; 0 for git). Each client's max RSS comes from /usr/bin/time; its byte
# count goes to bytes.WAY.K and must match the other side's.
batch() {
    local way=$1 pids=() k start end mem=0 daemon=0 rss input argv
    start=$(date +%s%N)
    for k in $(seq 0 $((clients - 1))); do
        client "$way" "$k"
        (
            set -o pipefail
            /usr/bin/time -f %M -o "$work/rss.$k" "${argv[@]}" <"$work/$input" | wc -c >"$work/bytes.$way.$k"
        ) &
        pids+=($!)
    done
    for k in "${!pids[@]}"; do
        wait "${pids[$k]}" || { echo "$way: client $k failed" >&2; exit 1; }
    done
    end=$(date +%s%N)
    for k in $(seq 0 $((clients - 1))); do
        rss=$(tail -n 1 "$work/rss.$k")
        mem=$((mem + rss))
    done
    if [ "${way%%-*}" = cb ]; then
        daemon=$(awk '/^VmHWM:/ { print $2 }' "/proc/$daemon_pid/status")
        mem=$((mem + daemon))
    fi
    awk -v ns=$((end - start)) -v mem="$mem" -v daemon="$daemon" 'BEGIN { printf "%.3f %d %d\n", ns / 1e9, mem, daemon }'
}

echo "repository: $repo ($(wc -l <"$work/blobs") blobs); $clients clients at once, $count random blobs each; $rounds rounds"
echo "binary: $CAT_BLOBD; git: $GIT ($("$GIT" --version)); $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-12s %5s %-5s %8s %10s %16s\n' mode round side wall_s mem_MiB of_which_daemon
for mode in cat-file fast-import; do
    for round in $(seq 1 "$rounds"); do
        # The side that goes first swaps every round.
        if [ $((round % 2)) = 1 ]; then sides="cb git"; else sides="git cb"; fi
        for side in $sides; do
            read -r wall mem daemon < <(batch "$side-$mode")
            echo "$wall $mem" >>"$work/results.$side-$mode"
            printf '%-12s %5s %-5s %8s %10.1f %16.1f\n' "$mode" "$round" "$side" "$wall" \
                "$(awk -v m="$mem" 'BEGIN { print m / 1024 }')" "$(awk -v m="$daemon" 'BEGIN { print m / 1024 }')"
        done
        for k in $(seq 0 $((clients - 1))); do
            cmp -s "$work/bytes.cb-$mode.$k" "$work/bytes.git-$mode.$k" \
                || { echo "$mode: client $k got a different byte count through cat-blobd than through git" >&2; exit 1; }
        done
    done
done

# `median WAY COLUMN` over the rounds.
median() { cut -d' ' -f"$2" "$work/results.$1" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
echo "medians of $rounds rounds ($clients clients x $count blobs; cat-blobd's memory: the daemon's VmHWM, a high-water mark over its life, plus every connect's max RSS; git's: every git's max RSS)"
printf '%-12s %12s %12s %8s %14s %14s %8s\n' mode cb_wall_s git_wall_s git/cb cb_mem_MiB git_mem_MiB git/cb
for mode in cat-file fast-import; do
    awk -v cw="$(median "cb-$mode" 1)" -v gw="$(median "git-$mode" 1)" \
        -v cm="$(median "cb-$mode" 2)" -v gm="$(median "git-$mode" 2)" -v mode="$mode" \
        'BEGIN { printf "%-12s %12.3f %12.3f %7.2fx %14.1f %14.1f %7.2fx\n", mode, cw, gw, gw / cw, cm / 1024, gm / 1024, gm / cm }'
done
echo "bytes per client (client 0): cat-file $(cat "$work/bytes.cb-cat-file.0"), fast-import $(cat "$work/bytes.cb-fast-import.0")"

# (c) One request at a time: the four ways open together, asked in turn for each blob, so that a change in the
# machine's load weighs on all alike; a fifth way, `cat` echoing a reply-shaped request ("x blob 0\n\n"), is the
# floor: what one round trip through pipes and the driver costs here. A reply is "<oid> blob <size>\n", then size bytes and "\n", for both
# protocols; the next request goes out only once the whole reply is read.
echo
python3 - "$work" "$CAT_BLOBD" "$GIT" "$repo" <<'PY'
import os, subprocess, sys, time
work, cat_blobd, git, repo = sys.argv[1:5]
socket = f"{work}/socket"
env_fi = dict(os.environ, GIT_DIR=f"{work}/fi.0.git")
ways = [
    ("cb cat-file", [cat_blobd, "connect", "--socket", socket, "cat-file", "--batch"], None, b"%s\n"),
    ("git cat-file", [git, "--git-dir", repo, "cat-file", "--batch"], None, b"%s\n"),
    ("cb fast-import", [cat_blobd, "connect", "--socket", socket, "--quiet"], None, b"cat-blob %s\n"),
    ("git fast-import", [git, "fast-import", "--quiet", "--cat-blob-fd=1"], env_fi, b"cat-blob %s\n"),
    ("floor (cat)", ["cat"], None, b"x blob 0\n\n"),
]
procs = [subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0)
         for _, argv, env, _ in ways]
ids = [line.strip().encode() for line in open(f"{work}/small")]
times = [[] for _ in ways]

def ask(proc, request):
    # One reply is outstanding at a time, so every byte read belongs to it: read in large chunks (not
    # byte by byte, as an unbuffered readline would) until the header and its payload are in.
    os.write(proc.stdin.fileno(), request)
    got = b""
    while b"\n" not in got:
        got += os.read(proc.stdout.fileno(), 1 << 16)
    header, rest = got.split(b"\n", 1)
    left = int(header.split()[2]) + 1 - len(rest)
    while left > 0:
        left -= len(os.read(proc.stdout.fileno(), 1 << 16))
    if left:
        sys.exit(f"{proc.args}: more bytes than the header's size")

for n, oid in enumerate(ids):
    for w, (proc, (_, _, _, template)) in enumerate(zip(procs, ways)):
        t0 = time.perf_counter_ns()
        ask(proc, template % oid if b"%s" in template else template)
        if n >= 20:
            times[w].append(time.perf_counter_ns() - t0)
for proc in procs:
    proc.stdin.close()
    proc.stdout.read()
    if proc.wait():
        sys.exit(f"{proc.args}: exit status {proc.returncode}")

def pct(values, p):
    values = sorted(values)
    return values[int((len(values) - 1) * p)] / 1000

print(f"one at a time, {len(ids) - 20} blobs of at most 16 KiB (after 20 warm-up requests), microseconds")
print(f"{'way':<16} {'p50_us':>8} {'p99_us':>8}")
for (name, *_), spent in zip(ways, times):
    print(f"{name:<16} {pct(spent, 0.5):>8.1f} {pct(spent, 0.99):>8.1f}")
for mode in ("cat-file", "fast-import"):
    cb, g = times[[w[0] for w in ways].index(f"cb {mode}")], times[[w[0] for w in ways].index(f"git {mode}")]
    print(f"{mode}: cat-blobd p50 = {pct(cb, 0.5) / pct(g, 0.5):.2f}x git's, p99 = {pct(cb, 0.99) / pct(g, 0.99):.2f}x git's")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
