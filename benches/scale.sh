#!/usr/bin/env bash
# The store's scale rows, side by side with git in one run (README, "Scale"): start-up on an empty stream, a
# 100,000-id --batch-check over many packs with and without a multi-pack-index, and one big blob.
#
#   benches/scale.sh startup  GIT_DIR [RUNS]          empty stream: median wall time (hyperfine) and peak RSS
#   benches/scale.sh check    GIT_DIR [COUNT] [RUNS]  --batch-check of COUNT random ids (seed 1), median wall
#   benches/scale.sh big      GIT_DIR ID [RUNS]       one blob through --batch and cat-blob: wall, peak RSS
#   benches/scale.sh marks    GIT_DIR MARKS [RUNS]    --import-marks=MARKS, then with --export-marks too: wall, RSS
#   benches/scale.sh stand-ins OUTDIR SOURCE_GIT_DIR  builds the many-pack and over-4-GiB stand-ins
#
# GIT (default: git on PATH) is the git compared with; CAT_BLOBD (default: target/release/cat-blobd) is measured.
# Output goes through a pipe to a reader that counts bytes, never to /dev/null. Runs alternate git, cat-blobd.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd -P)
GIT=${GIT:-git}
CAT_BLOBD=${CAT_BLOBD:-$HERE/target/release/cat-blobd}
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

# measure LABEL INPUT_FILE COMMAND...: one run; prints "LABEL seconds max_rss_kib"
measure() {
    local label=$1 input=$2
    shift 2
    local out
    out=$( { /usr/bin/time -f '%e %M' "$@" <"$input" | wc -c >/dev/null; } 2>&1 | tail -1)
    echo "$label $out"
}

# summarize: reads "LABEL seconds rss" lines, prints per label the median seconds and the largest RSS
summarize() {
    python3 -c '
import sys, statistics, collections
runs = collections.defaultdict(list)
for line in sys.stdin:
    label, secs, rss = line.split()
    runs[label].append((float(secs), int(rss)))
base = None
for label, values in runs.items():
    median = statistics.median(v[0] for v in values)
    base = base or median
    print("%-28s median %8.3f s  (%.2fx the first row)  peak RSS %7.1f MiB  runs %d" % (
        label, median, median / base if base else 0, max(v[1] for v in values) / 1024, len(values)))
'
}

# oracle GIT_DIR: a throwaway bare repository whose alternates reach GIT_DIR's objects (fast-import writes into
# its repository).
oracle() {
    local dir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/scale-oracle.XXXXXX")
    "$GIT" init -q --bare "$dir"
    echo "$(cd "$1" && pwd -P)/objects" >"$dir/objects/info/alternates"
    echo "$dir"
}

case "${1:-}" in
startup)
    # Milliseconds: hyperfine times them (/usr/bin/time counts in hundredths of a second); RSS from /usr/bin/time.
    command -v hyperfine >/dev/null || { echo "$0: startup needs hyperfine (apt-get install hyperfine)" >&2; exit 2; }
    dir=$2 runs=${3:-40}
    o=$(oracle "$dir")
    json=$(mktemp)
    GIT_DIR="$dir" hyperfine -N --warmup 3 --runs "$runs" --export-json "$json" \
        "$GIT cat-file --batch" "$CAT_BLOBD cat-file --batch" \
        "$GIT --git-dir=$o fast-import --quiet" "$CAT_BLOBD --git-dir=$dir --quiet" >/dev/null
    python3 - "$json" <<'EOF'
import json, statistics, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print("%-70s median %6.2f ms" % (r["command"][-70:], statistics.median(r["times"]) * 1000))
EOF
    for c in "$GIT cat-file --batch" "$CAT_BLOBD cat-file --batch"; do
        for _ in 1 2 3; do GIT_DIR="$dir" /usr/bin/time -f %M $c </dev/null 2>&1 >/dev/null | tail -1; done |
            sort -n | tail -1 | sed "s|^|peak RSS KiB (max of 3): |; s|\$| $c|"
    done
    rm -rf "$o" "$json"
    ;;
check)
    dir=$2 count=${3:-100000} runs=${4:-5}
    ids=$(mktemp)
    "$GIT" --git-dir="$dir" cat-file --batch-all-objects --batch-check='%(objectname)' \
        | shuf -n "$count" --random-source=<(yes) >"$ids"
    for _ in $(seq "$runs"); do
        measure "git-cat-file--batch-check" "$ids" "$GIT" --git-dir="$dir" cat-file --batch-check --buffer
        measure "cat-blobd-cat-file--batch-check" "$ids" env GIT_DIR="$dir" "$CAT_BLOBD" cat-file --batch-check --buffer
    done | summarize
    rm -f "$ids"
    ;;
big)
    dir=$2 id=$3 runs=${4:-3}
    one=$(mktemp) req=$(mktemp)
    echo "$id" >"$one"
    echo "cat-blob $id" >"$req"
    o=$(oracle "$dir")
    for _ in $(seq "$runs"); do
        measure "git-cat-file--batch" "$one" "$GIT" --git-dir="$dir" cat-file --batch
        measure "cat-blobd-cat-file--batch" "$one" env GIT_DIR="$dir" "$CAT_BLOBD" cat-file --batch
        measure "git-fast-import" "$req" "$GIT" --git-dir="$o" fast-import --quiet --cat-blob-fd=1
        measure "cat-blobd" "$req" "$CAT_BLOBD" --git-dir="$dir" --quiet
    done | summarize
    rm -rf "$one" "$req" "$o"
    ;;
marks)
    # Both run in one throwaway repository whose packs are hard links to GIT_DIR's (git fast-import writes into its
    # repository; through alternates git would also look for each of the marks' objects loose in it first, a
    # failed stat per mark). Three cat-blob requests at the start, middle and end of the marks.
    dir=$2 marks=$3 runs=${4:-3}
    o=$(mktemp -d "${TMPDIR:-/tmp}/scale-marks.XXXXXX")
    "$GIT" init -q --bare "$o/repo.git"
    cp -al "$dir/objects/pack/." "$o/repo.git/objects/pack/"
    last=$(tail -1 "$marks" | cut -d' ' -f1)
    printf 'cat-blob :1\ncat-blob :%s\ncat-blob %s\n' "$(( ${last#:} / 2 ))" "$last" >"$o/stream"
    for _ in $(seq "$runs"); do
        measure "git-fast-import-import" "$o/stream" "$GIT" --git-dir="$o/repo.git" fast-import --quiet \
            --cat-blob-fd=1 --import-marks="$marks"
        measure "cat-blobd-import" "$o/stream" "$CAT_BLOBD" --git-dir="$o/repo.git" --cat-blob-fd=1 \
            --import-marks="$marks"
    done | summarize
    for _ in $(seq "$runs"); do
        measure "git-fast-import-import+export" "$o/stream" "$GIT" --git-dir="$o/repo.git" fast-import --quiet \
            --cat-blob-fd=1 --import-marks="$marks" --export-marks="$o/git.marks"
        measure "cat-blobd-import+export" "$o/stream" "$CAT_BLOBD" --git-dir="$o/repo.git" --cat-blob-fd=1 \
            --import-marks="$marks" --export-marks="$o/cat-blobd.marks"
    done | summarize
    cmp "$o/git.marks" "$o/cat-blobd.marks" && echo "exported marks files: identical"
    rm -rf "$o"
    ;;
stand-ins)
    out=$2 source=$3
    mkdir -p "$out"
    # git.git's objects in packs of at most 8 MiB, then a copy with a multi-pack-index.
    rm -rf "$out/many-packs.git" "$out/many-packs-midx.git"
    "$GIT" init -q --bare "$out/many-packs.git"
    "$GIT" --git-dir="$source" cat-file --batch-all-objects --batch-check='%(objectname)' \
        | "$GIT" --git-dir="$source" pack-objects -q --max-pack-size=8m "$out/many-packs.git/objects/pack/pack"
    cp -a "$out/many-packs.git" "$out/many-packs-midx.git"
    "$GIT" --git-dir="$out/many-packs-midx.git" multi-pack-index write
    # Five 900 MiB incompressible blobs stored at compression 0, then 3,000 small blobs past the 4 GiB line.
    rm -rf "$out/over-4g.git"
    "$GIT" init -q --bare "$out/over-4g.git"
    python3 - <<'EOF' | "$GIT" --git-dir="$out/over-4g.git" -c core.compression=0 -c pack.compression=0 fast-import --quiet
import random, sys
out = sys.stdout.buffer
rng = random.Random(4)
for n in range(5):
    out.write(b"blob\ndata %d\n" % (900 << 20))
    for _ in range(900):
        out.write(rng.randbytes(1 << 20))
    out.write(b"\n")
for n in range(3000):
    body = b"small blob %d past the 4 GiB line\n" % n
    out.write(b"blob\ndata %d\n%s\n" % (len(body), body))
EOF
    ls -la "$out"/*/objects/pack | head -5
    ;;
*)
    sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
