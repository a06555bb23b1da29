# Shared by benches/daemon.sh and benches/stress.sh (sourced; needs `here` and `work` set): a pinned git
# environment, the repository to serve (`$1`, default the `basic` test fixture) in `git_dir`, and the binary
# in `CAT_BLOBD` (default: a release build of this checkout), and its blob ids in `$work/blobs`.
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
unset GIT_DIR GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES

if [ -n "${1:-}" ]; then
    git_dir=$(cd "$1" && pwd)
else
    fixtures=$(ls -d "$here"/target/tmp/fixtures-*/ 2>/dev/null | head -n 1 || true)
    if [ -z "$fixtures" ] || [ ! -e "$fixtures/COMPLETE" ]; then
        echo "building the test fixtures (about 15 s)..." >&2
        fixtures=$work/fixtures
        bash "$here/fixtures/make-fixtures.sh" "$fixtures" >/dev/null
    fi
    git_dir=$(cd "$fixtures/basic/.git" && pwd)
fi

if [ -z "${CAT_BLOBD:-}" ]; then
    (cd "$here" && cargo build --release --quiet)
    CAT_BLOBD=$here/target/release/cat-blobd
fi

GIT_DIR=$git_dir git cat-file --batch-all-objects --batch-check='%(objecttype) %(objectname)' \
    | awk '$1 == "blob" { print $2 }' >"$work/blobs"
