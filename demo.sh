#!/usr/bin/env bash
# Builds cat-blobd and serves every blob of a repository (default: this checkout) twice, through cat-blobd
# and through `git fast-import --cat-blob-fd`, then says whether the bytes are identical and how long each took.
#   ./demo.sh [GIT_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
git_dir=$(cd "${1:-$here}" && git rev-parse --absolute-git-dir)
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
bin="$here/target/release/cat-blobd"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git --git-dir="$git_dir" cat-file --batch-all-objects --unordered --batch-check='%(objecttype) %(objectname)' |
  awk '$1 == "blob" { print "cat-blob " $2 }' >"$work/requests"
blobs=$(wc -l <"$work/requests")
# git fast-import writes into its repository, so give it a throwaway one that borrows the objects.
git init -q --bare "$work/scratch.git"
echo "$git_dir/objects" >"$work/scratch.git/objects/info/alternates"

now() { date +%s.%N; }
t0=$(now)
"$bin" --git-dir="$git_dir" --stats <"$work/requests" 2>"$work/stats" | cat >"$work/ours"
t1=$(now)
git --git-dir="$work/scratch.git" fast-import --quiet --cat-blob-fd=1 <"$work/requests" | cat >"$work/git"
t2=$(now)

echo "repository:  $git_dir"
echo "requests:    $blobs cat-blob commands (every blob, pack order)"
echo "output:      $(wc -c <"$work/ours") bytes through a pipe"
if cmp -s "$work/ours" "$work/git"; then
  echo "identical:   yes, byte for byte with git fast-import"
else
  echo "identical:   NO — outputs differ ($(cmp "$work/ours" "$work/git" 2>&1 | head -n1))"
  exit 1
fi
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {
  ours = b - a; git = c - b
  printf "cat-blobd:   %.3f s\ngit:         %.3f s  (%.1fx of cat-blobd; one run, includes start-up: see benches/README.md)\n", ours, git, git / ours
}'
echo
cat "$work/stats"
