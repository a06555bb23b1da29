#!/bin/sh
# Runs git's own fast-import tests (t/t9300-fast-import.sh) from a git source tree twice: with a git alone, and
# with every `git fast-import` routed to cat-blobd (which hands writing commands to that same git). Prints both
# summaries and the cases that pass with git alone but fail through cat-blobd.
#
# usage: scripts/t9300.sh [--git <git binary>] [--test <script>] <git source tree> [cat-blobd binary]
#
# --git: the git to compare with (default: `git` on PATH), installed or built in a source tree, e.g.
#   /work/git-src/v2.55.0/git; a git that was not installed runs its builtins from its build directory. Use the
#   source tree of that git's version (a worktree of git.git at its tag). git's test library needs
#   GIT-BUILD-OPTIONS, templates and t/helper/test-tool from the tree, and nothing else: build those once,
#   make -C <tree> NO_CURL=1 NO_EXPAT=1 NO_GETTEXT=1 NO_TCLTK=1 NO_PYTHON=1 t/helper/test-tool GIT-BUILD-OPTIONS &&
#   make -C <tree>/templates
# (about ten minutes; in a tree where git was built, repeat the flags of that build so nothing else rebuilds).
# For a git that was not installed, also build the scripts t9300 runs (`git submodule`):
#   make -C <tree> <same flags> git-submodule git-sh-setup git-sh-i18n
# --test: another of the tree's fast-import test scripts, e.g. t9305-fast-import-signatures.sh (git >= 2.50).
# git's test files are used in place and never copied here.
set -eu

git_arg= test_script=t9300-fast-import.sh
while test $# -gt 0; do
	case "$1" in
	--git) git_arg=${2:?--git needs a path}; shift 2 ;;
	--test) test_script=${2:?--test needs a test script name}; shift 2 ;;
	*) break ;;
	esac
done
src=$(cd "${1:?usage: $0 [--git <git>] <git source tree> [cat-blobd]}" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
cat_blobd=$(realpath "${2:-$here/target/release/cat-blobd}")
test -x "$cat_blobd" || { echo "no cat-blobd at $cat_blobd (cargo build --release)" >&2; exit 2; }
real_git=$(realpath "${git_arg:-$(command -v git)}")
real_bin=$(dirname "$real_git")
# An installed git knows where its helpers are; one built in a tree has them (its builtins) beside itself.
exec_path=$("$real_git" --exec-path)
test -d "$exec_path" || exec_path=$real_bin
GIT_TEST_EXEC_PATH=$exec_path
export GIT_TEST_EXEC_PATH

test -x "$src/t/helper/test-tool" || { echo "build $src/t/helper/test-tool first (see the top of $0)" >&2; exit 2; }
test -f "$src/t/$test_script" || { echo "no $src/t/$test_script" >&2; exit 2; }
echo "git: $("$real_git" version) ($real_git); tests: $src/t/$test_script"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
# The wrapper: `git [-C dir] [--git-dir=d] fast-import …` runs cat-blobd; anything else, and cat-blobd's own
# `git fast-import` child (marked by CAT_BLOBD_WRAPPED), runs the git compared with.
cat >"$work/bin/git" <<EOF
#!/bin/sh
if test -z "\${CAT_BLOBD_WRAPPED:-}"; then
	dir=
	while test \$# -gt 0; do
		case "\$1" in
		-C) dir=\$2; shift 2 ;;
		--git-dir=*) GIT_DIR=\${1#--git-dir=}; export GIT_DIR; shift ;;
		fast-import)
			shift
			test -z "\$dir" || cd "\$dir" || exit 128
			CAT_BLOBD_WRAPPED=1 exec "$cat_blobd" "\$@" ;;
		*) break ;;
		esac
	done
	test -z "\$dir" || set -- -C "\$dir" "\$@"
fi
exec "$real_git" "\$@"
EOF
chmod +x "$work/bin/git"
# git alone: the same directory without the wrapper.
mkdir "$work/plain"
ln -s "$real_git" "$work/plain/git"
for tool in "$real_bin"/git-*; do
	test -f "$tool" && test -x "$tool" || continue
	ln -s "$tool" "$work/bin/" 2>/dev/null || true
	ln -s "$tool" "$work/plain/" 2>/dev/null || true
done

run() {
	label=$1 installed=$2
	(cd "$src/t" && GIT_TEST_INSTALLED=$installed TEST_OUTPUT_DIRECTORY="$work/$label" \
		sh "./$test_script" -v 2>&1) >"$work/$label.log" || true
	grep -E '^(ok|not ok) [0-9]+ ' "$work/$label.log" >"$work/$label.raw" || true
	sed 's/ # .*//' "$work/$label.raw" >"$work/$label.results"
	printf '%s: %s ok (%s of them skipped), %s not ok\n' "$label" "$(grep -c '^ok' "$work/$label.results")" \
		"$(grep -c '^ok .* # skip' "$work/$label.raw")" "$(grep -c '^not ok' "$work/$label.results")"
}

run git "$work/plain"
run cat-blobd "$work/bin"

echo "Pass with git alone, fail through cat-blobd:"
grep '^ok' "$work/git.results" | sed 's/^ok //' | sort >"$work/git.ok"
grep '^not ok' "$work/cat-blobd.results" | sed 's/^not ok //' | sort >"$work/ours.failed"
comm -12 "$work/git.ok" "$work/ours.failed" | sort -n | tee "$work/regressions"
if test -n "${T9300_KEEP_LOGS:-}"; then
	cp "$work/git.log" "$work/cat-blobd.log" "$T9300_KEEP_LOGS/"
fi
test ! -s "$work/regressions"
