#!/usr/bin/env bash
# Builds fuzz/repo/objects: the small repository that the `session` and `idx` fuzz targets (and their replay in
# tests/fuzz_replay.rs) read. Object ids are pinned (dates, names, content); pack bytes depend on git's version,
# which is why the result is checked in rather than rebuilt: the corpora were made against these exact bytes.
#
#   fuzz/make-repo.sh          # rewrites fuzz/repo/objects (then re-seed and re-minimize the corpora)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd -P)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cat-blobd-fuzz-repo.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
for v in $(env | sed -n 's/^\(GIT_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME="$WORK" TZ=UTC LC_ALL=C
export GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=pack.threads GIT_CONFIG_VALUE_0=1 GIT_CONFIG_KEY_1=gc.auto GIT_CONFIG_VALUE_1=0

git init -q --bare -b main "$WORK/repo.git"
python3 - <<'PY' | git --git-dir="$WORK/repo.git" fast-import --quiet
import sys
out = sys.stdout.buffer
def data(b):
    out.write(b"data %d\n" % len(b) + b + b"\n")
text = [b"line %d of a text file that changes a little in every commit\n" % i for i in range(40)]
for k in range(6):
    text[(k * 7) % len(text)] = b"edited in commit %d\n" % k
    out.write(b"commit refs/heads/main\n")
    out.write(b"committer C O Mitter <c@example.com> %d +0000\n" % (1700000000 + 60 * k))
    data(b"commit %d\n" % k)
    out.write(b"M 100644 inline file.txt\n")
    data(b"".join(text))
    if k == 0:
        out.write(b"M 100644 inline empty\n")
        data(b"")
        out.write(b"M 100644 inline dir/nul.bin\n")
        data(b"a\0b\0\xff\n")
        out.write(b"M 120000 inline link\n")
        data(b"file.txt")
        out.write(b"M 160000 1111111111111111111111111111111111111111 sub\n")
out.write(b"tag v1\nfrom refs/heads/main\ntagger T <t@example.com> 1700001000 +0000\n")
data(b"a tag\n")
out.write(b"done\n")
PY
git --git-dir="$WORK/repo.git" repack -q -adf --depth=10 --window=10
printf 'a loose blob\n' | git --git-dir="$WORK/repo.git" hash-object -w --stdin >/dev/null
printf 'another\0loose\0blob' | git --git-dir="$WORK/repo.git" hash-object -w --stdin >/dev/null
git --git-dir="$WORK/repo.git" fsck --no-progress --no-dangling >/dev/null
rm -rf "$HERE/repo"
mkdir -p "$HERE/repo"
cp -r "$WORK/repo.git/objects" "$HERE/repo/objects"
rm -rf "$HERE/repo/objects/info" "$HERE"/repo/objects/pack/*.bitmap "$HERE"/repo/objects/pack/*.rev
find "$HERE/repo" -type f -exec chmod 0644 {} +
git --git-dir="$WORK/repo.git" cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype) %(objectsize)' >"$HERE/repo/OBJECTS"
