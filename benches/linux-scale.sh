#!/usr/bin/env bash
# Builds the linux.git-scale stand-in: COUNT (default 10,000,000) small blobs of about 330 bytes, each sharing all
# but one line with the one before, written by `git fast-import` (which deltas each blob against the previous one,
# so the pack holds depth-50 chains, as linux.git's does), with a marks file of every blob (`marks`).
#
#   benches/linux-scale.sh OUTDIR [COUNT]
#
# OUTDIR/repo.git is the repository; OUTDIR/COMPLETE is written last. 10M blobs: about 5 minutes and 4 GB of
# disk here (2 cores). `cargo bench --bench vs_git -- --linux-scale` builds it once under target/bench-corpus/.
set -euo pipefail
if [ $# -lt 1 ]; then
    sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
OUT=$1
COUNT=${2:-10000000}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd -P)
rm -rf "$OUT/repo.git" "$OUT/COMPLETE"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
git init -q --bare "$OUT/repo.git"
python3 - "$COUNT" <<'EOF' | git --git-dir="$OUT/repo.git" fast-import --quiet --export-marks="$OUT/marks"
import sys

count = int(sys.argv[1])
out = sys.stdout.buffer
lines = [b"  int f%d = %08d; /* unchanged */\n" % (k, k * 7919) for k in range(8)]
batch = []
for i in range(1, count + 1):
    lines[i % 8] = b"  int f%d = %08d; /* blob %d */\n" % (i % 8, i, i)
    body = b"/* a small source file, version %d */\n" % i + b"".join(lines)
    batch.append(b"blob\nmark :%d\ndata %d\n%s\n" % (i, len(body), body))
    if len(batch) == 4096:
        out.write(b"".join(batch))
        batch.clear()
out.write(b"".join(batch))
EOF
touch "$OUT/COMPLETE"
