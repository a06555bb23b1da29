#!/bin/sh
# Runs git's own fast-import tests (t/t9300-fast-import.sh) from a git source tree twice: with the installed git,
# and with every `git fast-import` routed to cat-blobd (which hands writing commands to the installed git).
# Prints both summaries and the cases that pass with git alone but fail through cat-blobd.
#
# usage: scripts/t9300.sh <git source tree> [cat-blobd binary]
#
# The source tree should match the installed git's version (e.g. `git archive v2.47.3` of git.git). git's test
# library needs GIT-BUILD-OPTIONS, templates and t/helper/test-tool from it, and nothing else: build those once,
#   make -C <tree> NO_CURL=1 NO_EXPAT=1 NO_GETTEXT=1 NO_TCLTK=1 NO_PYTHON=1 t/helper/test-tool && make -C <tree>/templates
# (about ten minutes). git itself is the installed one (GIT_TEST_INSTALLED). git's test files are used in place
# and never copied here.
set -eu

src=$(cd "${1:?usage: $0 <git source tree> [cat-blobd]}" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
cat_blobd=$(realpath "${2:-$here/target/release/cat-blobd}")
test -x "$cat_blobd" || { echo "no cat-blobd at $cat_blobd (cargo build --release)" >&2; exit 2; }
real_git=$(command -v git)
real_bin=$(dirname "$real_git")

test -x "$src/t/helper/test-tool" || { echo "build $src/t/helper/test-tool first (see the top of $0)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
# The wrapper: `git [-C dir] [--git-dir=d] fast-import …` runs cat-blobd; anything else, and cat-blobd's own
# `git fast-import` child (marked by CAT_BLOBD_WRAPPED), runs the installed git.
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
for tool in "$real_bin"/git-*; do
	test -e "$tool" && ln -s "$tool" "$work/bin/" 2>/dev/null || true
done

run() {
	label=$1 installed=$2
	(cd "$src/t" && GIT_TEST_INSTALLED=$installed TEST_OUTPUT_DIRECTORY="$work/$label" \
		sh ./t9300-fast-import.sh -v 2>&1) >"$work/$label.log" || true
	grep -E '^(ok|not ok) [0-9]+ ' "$work/$label.log" | sed 's/ # .*//' >"$work/$label.results" || true
	printf '%s: %s ok, %s not ok\n' "$label" "$(grep -c '^ok' "$work/$label.results")" \
		"$(grep -c '^not ok' "$work/$label.results")"
}

run git "$real_bin"
run cat-blobd "$work/bin"

echo "Pass with git alone, fail through cat-blobd:"
grep '^ok' "$work/git.results" | sed 's/^ok //' | sort >"$work/git.ok"
grep '^not ok' "$work/cat-blobd.results" | sed 's/^not ok //' | sort >"$work/ours.failed"
comm -12 "$work/git.ok" "$work/ours.failed" | sort -n | tee "$work/regressions"
if test -n "${T9300_KEEP_LOGS:-}"; then
	cp "$work/git.log" "$work/cat-blobd.log" "$T9300_KEEP_LOGS/"
fi
test ! -s "$work/regressions"
