#!/usr/bin/env bash
# Runs git-filter-repo's own test suite (every t/t[0-9]*.sh of its source tree) twice: with plain git, and with
# cat-blobd's shim first on PATH, so that filter-repo's `git fast-import` and `git cat-file` go to cat-blobd. Prints
# the passed/failed counts of each run, per script and in total, and how many commands cat-blobd answered.
#
#   scripts/filter-repo-suite.sh FILTER_REPO_SOURCE_TREE [CAT_BLOBD]
#
# CAT_BLOBD defaults to target/release/cat-blobd (else target/debug/cat-blobd) of this checkout. The suite runs
# `git filter-repo`, which git starts with its exec-path first on PATH (git.c's setup_path); where that directory
# holds a `git` (as /usr/lib/git-core and `make install`'s libexec/git-core do), filter-repo's own git commands
# would reach that git, not the shim. So the shim run gives git an exec-path (GIT_EXEC_PATH) of links to the real
# one's entries, whose `git` is the shim. The source tree is not modified outside its t/ trash directories.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 FILTER_REPO_SOURCE_TREE [CAT_BLOBD]" >&2
    exit 2
fi
SRC=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")/.." && pwd)
CAT_BLOBD=${2:-}
if [ -z "$CAT_BLOBD" ]; then
    CAT_BLOBD=$HERE/target/release/cat-blobd
    [ -x "$CAT_BLOBD" ] || CAT_BLOBD=$HERE/target/debug/cat-blobd
fi
[ -x "$CAT_BLOBD" ] || { echo "$0: no cat-blobd at $CAT_BLOBD (cargo build --release)" >&2; exit 1; }
[ -f "$SRC/t/test-lib.sh" ] || { echo "$0: $SRC is not a git-filter-repo source tree (no t/test-lib.sh)" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/filter-repo-suite.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
"$CAT_BLOBD" shim "$WORK/bin" >/dev/null
REAL_EXEC_PATH=$(git --exec-path)
mkdir "$WORK/exec-path"
for entry in "$REAL_EXEC_PATH"/*; do
    [ "$(basename "$entry")" = git ] || ln -s "$entry" "$WORK/exec-path/"
done
ln -s "$(readlink "$WORK/bin/git")" "$WORK/exec-path/git"

# One run of every script; `ok`/`not ok` lines counted (known breakages, `# TODO`, apart).
run_suite() {
    local label=$1 total_ok=0 total_failed=0 total_todo=0
    for script in "$SRC"/t/t[0-9]*.sh; do
        local name out ok failed todo
        name=$(basename "$script")
        out="$WORK/$label-$name.out"
        (cd "$SRC/t" && PYTHONPATH="$SRC${PYTHONPATH:+:$PYTHONPATH}" PRETEND_UNICODE_ARGS=1 TEST_SHELL_PATH=/bin/sh \
            bash "$name") >"$out" 2>&1 || true
        ok=$(grep -c '^ok ' "$out" || true)
        failed=$(grep '^not ok ' "$out" | grep -vc '# TODO' || true)
        todo=$(grep '^not ok ' "$out" | grep -c '# TODO' || true)
        printf '%-6s %-58s passed %3d  failed %3d  known-broken %d\n' "$label" "$name" "$ok" "$failed" "$todo"
        grep '^not ok ' "$out" | grep -v '# TODO' | sed "s/^/       $label: /" || true
        total_ok=$((total_ok + ok)) total_failed=$((total_failed + failed)) total_todo=$((total_todo + todo))
    done
    printf '%-6s %-58s passed %3d  failed %3d  known-broken %d\n' "$label" TOTAL "$total_ok" "$total_failed" "$total_todo"
}

run_suite git
PATH="$WORK/bin:$PATH" GIT_EXEC_PATH="$WORK/exec-path" CAT_BLOBD_SHIM_LOG="$WORK/shim.log" run_suite shim
touch "$WORK/shim.log"
# A log line is `<who> <arguments>`: cat-blobd's start with the command word, git's with the global options.
count() { grep -cE "$1" "$WORK/shim.log" || true; }
printf 'shim log: cat-blobd answered cat-file %d times, fast-import %d times\n' \
    "$(count '^cat-blobd cat-file( |$)')" "$(count '^cat-blobd fast-import( |$)')"
printf 'shim log: git ran cat-file %d times, fast-import %d times (cat-blobd'"'"'s write-through included), %d others\n' \
    "$(count '^git( .*)? cat-file( |$)')" "$(count '^git( .*)? fast-import( |$)')" \
    "$(grep -vE '^git( .*)? (cat-file|fast-import)( |$)' "$WORK/shim.log" | grep -c '^git ' || true)"
