#!/usr/bin/env bash
# Builds a history-shaped linux.git stand-in (issue 28): benches/linux-history.py writes a seeded history (a deep
# tree, commits changing 1-5 files, topic branches and merges) through `git fast-import`, then git packs it as a
# server packs it, in three repositories:
#
#   OUTDIR/repo.git    one pack: `git repack -adf --depth=50 --window=WINDOW`
#   OUTDIR/midx.git    the same objects in PACKS packs (`git repack -ad --max-pack-size`, deltas reused; a delta
#                      whose base went to another pack is stored whole) and a multi-pack-index over them
#   OUTDIR/bitmap.git  the one pack again with a reachability bitmap (`git repack -adb`, deltas reused)
#
#   benches/linux-history.sh OUTDIR PRESET
#   benches/linux-history.sh OUTDIR REGIME COMMITS FILES DIRS [WINDOW] [SEED] [PACKS]
#
# PRESET is one of (what came out here; the small ones take 10-15 minutes, A and B an hour or more on a loaded
# 2-core machine):
#   small-A  small files, 40,000 commits, 10,000 files in 650 directories: 395,508 objects, blobs of 6.3 KB
#   small-B  linux-sized files, 25,000 commits, 10,000 files in 650 directories: 251,643 objects, blobs of 13.8 KB
#   A        small files, 150,000 commits, 80,000 files in 5,000 directories, window 10: about 1.6M objects
#   B        linux-sized files, 60,000 commits, 80,000 files in 5,000 directories, window 10: 702,364 objects
# REGIME is `small` or `linux`. WINDOW defaults to 50, SEED to 1, PACKS to 4.
#
# OUTDIR/COMPLETE is written last, OUTDIR/shape.txt says what was built and how long each step took. Rerunning
# rebuilds from scratch. git is `git` on PATH (GIT=... to choose another); config is pinned
# (GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null), so the object ids are the same on every machine.
set -euo pipefail
usage() { sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
OUT=$1
shift
case "$1" in
small-A) set -- small 40000 10000 650 ;;
small-B) set -- linux 25000 10000 650 ;;
A) set -- small 150000 80000 5000 10 ;;
B) set -- linux 60000 80000 5000 10 ;;
small | linux) [ $# -ge 4 ] || usage ;;
*) usage ;;
esac
REGIME=$1 COMMITS=$2 FILES=$3 DIRS=$4 WINDOW=${5:-50} SEED=${6:-1} PACKS=${7:-4}
HERE=$(cd "$(dirname "$0")" && pwd -P)
GIT=${GIT:-git}
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
unset GIT_DIR GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd -P)
rm -rf "$OUT/repo.git" "$OUT/midx.git" "$OUT/bitmap.git" "$OUT/COMPLETE" "$OUT/shape.txt"
step_start=$(date +%s)
log() {
    local now
    now=$(date +%s)
    echo "$1: $((now - step_start)) s (load $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$OUT/shape.txt" >&2
    step_start=$now
}
{
    echo "benches/linux-history.sh $REGIME commits=$COMMITS files=$FILES dirs=$DIRS window=$WINDOW seed=$SEED packs=$PACKS"
    echo "$($GIT --version), $(nproc) cores, started $(date -u '+%F %T') UTC"
} >"$OUT/shape.txt"

"$GIT" init -q --bare "$OUT/repo.git"
python3 "$HERE/linux-history.py" --seed "$SEED" --commits "$COMMITS" --files "$FILES" --dirs "$DIRS" \
    --regime "$REGIME" | "$GIT" --git-dir="$OUT/repo.git" fast-import --quiet
log "history through fast-import"
# A bare repository writes a bitmap with -a by default (repack.writeBitmaps): only bitmap.git has one.
"$GIT" --git-dir="$OUT/repo.git" -c repack.writeBitmaps=false repack -adfq --depth=50 --window="$WINDOW"
"$GIT" --git-dir="$OUT/repo.git" pack-refs --all
log "repack -adf --depth=50 --window=$WINDOW"

pack=$(ls "$OUT"/repo.git/objects/pack/pack-*.pack)
cp -r "$OUT/repo.git" "$OUT/midx.git"
"$GIT" --git-dir="$OUT/midx.git" repack -adq --max-pack-size=$(($(stat -c %s "$pack") / PACKS + 1))
"$GIT" --git-dir="$OUT/midx.git" multi-pack-index write
log "midx.git: $(ls "$OUT"/midx.git/objects/pack/*.pack | wc -l) packs and a multi-pack-index"
cp -r "$OUT/repo.git" "$OUT/bitmap.git"
"$GIT" --git-dir="$OUT/bitmap.git" repack -adbq --depth=50 --window="$WINDOW"
log "bitmap.git: repack -adb"

# The shape: objects by type, their mean size, and the delta depths of the one-pack repository.
"$GIT" --git-dir="$OUT/repo.git" verify-pack -v "$pack" | python3 -c '
import collections, sys
count, deltas, depth = collections.Counter(), collections.Counter(), collections.Counter()
for line in sys.stdin:
    f = line.split()
    if len(f) < 5 or len(f[0]) != 40 or f[1] not in ("blob", "tree", "commit", "tag"):
        continue
    kind = f[1]
    count[kind] += 1
    if len(f) >= 7:
        deltas[kind] += 1
        depth[kind] += int(f[5])
total = sum(count.values())
print("objects %d in one pack of %d bytes" % (total, int(sys.argv[1])))
for kind in ("commit", "tree", "blob"):
    n = count[kind]
    if n:
        print("%-6s %9d  %5.1f%% deltas, mean depth of deltas %.1f" % (
            kind, n, 100.0 * deltas[kind] / n, depth[kind] / max(1, deltas[kind])))
' "$(stat -c %s "$pack")" >>"$OUT/shape.txt"
"$GIT" --git-dir="$OUT/repo.git" cat-file --batch-all-objects --batch-check='%(objecttype) %(objectsize)' \
    | awk '{ n[$1]++; s[$1] += $2 } END { for (t in n) printf "mean size of a %s: %.0f bytes\n", t, s[t] / n[t] }' \
    | sort >>"$OUT/shape.txt"
log "shape"
touch "$OUT/COMPLETE"
cat "$OUT/shape.txt"
