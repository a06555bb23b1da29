#!/usr/bin/env bash
# Runs git's own cat-file test script, t/t1006-cat-file.sh, against `cat-blobd cat-file`, with git's real test
# library.
#
#   scripts/t1006.sh GIT_SOURCE_TREE [CAT_BLOBD] [-- TEST_OPTIONS...]
#
# GIT_SOURCE_TREE is a checkout of git's source, best of the installed git's version (e.g.
#   git --git-dir=/path/to/git.git worktree add /tmp/git-src v2.47.3). Only what the test library needs is
#   built in it (t/helper/test-tool, GIT-BUILD-OPTIONS and templates/blt), and only if missing.
# CAT_BLOBD defaults to target/release/cat-blobd, else target/debug/cat-blobd.
# TEST_OPTIONS go to the test script (e.g. -v, -i, --run=1-20).
#
# The installed git runs everything but cat-file: GIT_TEST_INSTALLED points the test library at a directory
# holding a wrapper `git` that sends `cat-file` (after git's -C, -c, --git-dir and --no-replace-objects
# options) to cat-blobd and every other command to the installed git. Prints the pass count and the failing
# cases; the full output is in $WORK/t1006.log. Nothing of git's is copied into this repository.
set -euo pipefail

if [ $# -lt 1 ]; then
    sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
SRC=$(cd "$1" && pwd -P)
shift
HERE=$(cd "$(dirname "$0")/.." && pwd -P)
CAT_BLOBD=""
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    CAT_BLOBD=$(realpath "$1")
    shift
fi
if [ -z "$CAT_BLOBD" ]; then
    for candidate in "$HERE/target/release/cat-blobd" "$HERE/target/debug/cat-blobd"; do
        if [ -x "$candidate" ]; then CAT_BLOBD=$candidate; break; fi
    done
fi
[ -x "$CAT_BLOBD" ] || { echo "$0: no cat-blobd binary (cargo build first, or pass its path)" >&2; exit 2; }
[ "${1:-}" = "--" ] && shift
[ -f "$SRC/t/t1006-cat-file.sh" ] || { echo "$0: $SRC/t/t1006-cat-file.sh not found" >&2; exit 2; }

REAL_GIT=$(command -v git)
if [ ! -x "$SRC/t/helper/test-tool" ] || [ ! -f "$SRC/GIT-BUILD-OPTIONS" ] || [ ! -d "$SRC/templates/blt" ]; then
    echo "building test-tool in $SRC (once)..." >&2
    make -C "$SRC" -j"$(nproc)" NO_CURL=1 NO_EXPAT=1 NO_TCLTK=1 NO_GETTEXT=1 NO_PERL=1 NO_PYTHON=1 \
        t/helper/test-tool GIT-BUILD-OPTIONS >"$SRC/.cat-blobd-build.log" 2>&1 &&
        make -C "$SRC/templates" >>"$SRC/.cat-blobd-build.log" 2>&1 ||
        { echo "$0: building test-tool failed; see $SRC/.cat-blobd-build.log" >&2; exit 2; }
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cat-blobd-t1006.XXXXXX")
mkdir -p "$WORK/bin"
cat >"$WORK/bin/git" <<EOF
#!/usr/bin/env bash
# git, except that cat-file is cat-blobd's.
real=$(printf '%q' "$REAL_GIT")
catblobd=$(printf '%q' "$CAT_BLOBD")
EOF
cat >>"$WORK/bin/git" <<'EOF'
args=("$@")
# Find the command past git's own options; only cat-file gets them applied here.
i=0
while [ $i -lt ${#args[@]} ]; do
    case "${args[$i]}" in
        -C | -c) i=$((i + 2)) ;;
        --git-dir=* | --no-replace-objects) i=$((i + 1)) ;;
        *) break ;;
    esac
done
[ "${args[$i]:-}" = cat-file ] || exec "$real" "$@"
j=0
while [ $j -lt $i ]; do
    case "${args[$j]}" in
        -C) cd "${args[$((j + 1))]}" || exit 128; j=$((j + 2)) ;;
        -c)
            kv=${args[$((j + 1))]}
            n=${GIT_CONFIG_COUNT:-0}
            export "GIT_CONFIG_KEY_$n=${kv%%=*}"
            if [ "$kv" = "${kv#*=}" ]; then export "GIT_CONFIG_VALUE_$n=true"; else export "GIT_CONFIG_VALUE_$n=${kv#*=}"; fi
            export GIT_CONFIG_COUNT=$((n + 1))
            j=$((j + 2)) ;;
        --git-dir=*) export GIT_DIR="${args[$j]#--git-dir=}"; j=$((j + 1)) ;;
        --no-replace-objects) export GIT_NO_REPLACE_OBJECTS=1; j=$((j + 1)) ;;
    esac
done
exec "$catblobd" cat-file "${args[@]:$((i + 1))}"
EOF
chmod +x "$WORK/bin/git"

cd "$SRC/t"
set +e
GIT_TEST_INSTALLED="$WORK/bin" TEST_OUTPUT_DIRECTORY="$WORK" bash t1006-cat-file.sh "$@" >"$WORK/t1006.log" 2>&1
status=$?
set -e
passed=$(grep -c '^ok ' "$WORK/t1006.log" || true)
failed=$(grep -c '^not ok ' "$WORK/t1006.log" || true)
echo "t1006 against $CAT_BLOBD: $passed passed, $failed failed (exit $status); log: $WORK/t1006.log"
grep '^not ok ' "$WORK/t1006.log" || true
