#!/usr/bin/env bash
# Soak test (issue 6, item 5): millions of requests through one cat-blobd process, sampling its resident memory,
# to show that memory is flat after warm-up (no per-request growth). Not part of `cargo test`.
#
#   benches/soak.sh [REPO] [REQUESTS] [INTERVAL]
#
# REPO: any repository (default: this checkout). REQUESTS: default 10,000,000. INTERVAL: seconds between samples
# (default 2). The stream defines 1,000 blobs with marks up front (not counted), then cycles through a fixed mix:
# 60% `cat-blob` of existing blobs (up to 16 KiB, so the run measures per-request cost rather than bytes), 15%
# `cat-blob` of missing ids, 10% `cat-blob :<mark>`, 10% `get-mark`, 5% `ls` of a commit's paths. Responses go to
# /dev/null.
# Prints one line per sample: seconds, VmRSS and VmHWM (KiB); then the spread of RSS after the first quarter.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=${1:-$(git rev-parse --absolute-git-dir)}
REQUESTS=${2:-10000000}
INTERVAL=${3:-2}
if [ -d "$REPO/.git" ]; then REPO=$REPO/.git; fi

cargo build --release --quiet
BIN=target/release/cat-blobd
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cat-blobd-soak.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

git --git-dir "$REPO" cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype) %(objectsize)' |
    awk '$2 == "blob" && $3 <= 16384 && n < 20000 { print $1; n++ }' >"$WORK/blobs"
HEAD=$(git --git-dir "$REPO" rev-parse HEAD)
# awk, not head: head would stop reading early and git would die of SIGPIPE (fatal under pipefail).
git --git-dir "$REPO" ls-tree -r --name-only HEAD | awk 'NR <= 200' >"$WORK/paths"
[ -s "$WORK/blobs" ] || { echo "soak.sh: no blobs in $REPO" >&2; exit 1; }

mkfifo "$WORK/in"
python3 - "$WORK/blobs" "$WORK/paths" "$HEAD" "$REQUESTS" >"$WORK/in" <<'PY' &
import random, sys
blobs = [l.strip().encode() for l in open(sys.argv[1])]
paths = [l.rstrip("\n").encode() for l in open(sys.argv[2])]
head, total = sys.argv[3].encode(), int(sys.argv[4])
rng = random.Random(5)
out = sys.stdout.buffer
head_lines = []
for m in range(1, 1001):
    body = b"soak blob %d\n" % m
    head_lines.append(b"blob\nmark :%d\ndata %d\n%s\n" % (m, len(body), body))
out.write(b"".join(head_lines))
# A fixed cycle of 100,000 requests, repeated: the stream generator costs little and the mix stays constant.
cycle = []
for _ in range(100000):
    r = rng.random()
    if r < 0.60:
        cycle.append(b"cat-blob " + rng.choice(blobs) + b"\n")
    elif r < 0.75:
        cycle.append(b"cat-blob %040x\n" % rng.getrandbits(160))
    elif r < 0.85:
        cycle.append(b"cat-blob :%d\n" % rng.randint(1, 1000))
    elif r < 0.95:
        cycle.append(b"get-mark :%d\n" % rng.randint(1, 1000))
    elif paths:
        cycle.append(b"ls " + head + b" " + rng.choice(paths) + b"\n")
    else:
        cycle.append(b"get-mark :1\n")
chunk = b"".join(cycle)
sent = 0
while sent + len(cycle) <= total:
    out.write(chunk)
    sent += len(cycle)
out.write(b"".join(cycle[:total - sent]))
out.write(b"done\n")
out.flush()
PY
GEN=$!

start=$(date +%s.%N)
"$BIN" --git-dir "$REPO" --quiet --stats <"$WORK/in" >/dev/null 2>"$WORK/stderr" &
PID=$!
echo "# cat-blobd pid $PID, $REQUESTS requests on $REPO ($(wc -l <"$WORK/blobs") blobs)"
echo "# seconds  VmRSS_KiB  VmHWM_KiB"
: >"$WORK/samples"
while kill -0 "$PID" 2>/dev/null; do
    if status=$(cat "/proc/$PID/status" 2>/dev/null); then
        rss=$(awk '/^VmRSS:/ { print $2 }' <<<"$status")
        hwm=$(awk '/^VmHWM:/ { print $2 }' <<<"$status")
        if [ -n "$rss" ]; then
            now=$(date +%s.%N)
            printf '%8.1f  %9s  %9s\n' "$(echo "$now - $start" | bc)" "$rss" "$hwm" | tee -a "$WORK/samples"
        fi
    fi
    sleep "$INTERVAL"
done
wait "$PID" && rc=0 || rc=$?
wait "$GEN" || true
cat "$WORK/stderr"
echo "# exit status $rc"
awk 'NR > 0 { rss[NR] = $2 } END {
    n = NR; if (n < 4) { print "# too few samples"; exit }
    lo = hi = rss[int(n / 4) + 1]
    for (i = int(n / 4) + 1; i <= n; i++) { if (rss[i] < lo) lo = rss[i]; if (rss[i] > hi) hi = rss[i] }
    printf "# after warm-up (samples %d..%d): RSS %d..%d KiB, spread %d KiB\n", int(n / 4) + 1, n, lo, hi, hi - lo
}' "$WORK/samples"
exit "$rc"
