#!/usr/bin/env bash
# Installs the real cat-file clients that tests/clients.rs runs against cat-blobd, into DIR (a folder under
# target/): GitPython and git-filter-repo from PyPI into DIR/venv, and checks for perl's Git.pm (installing the
# Debian package libgit-perl with apt-get when it is missing and we may). Nothing is installed by hand.
#
#   scripts/install-clients.sh DIR
#
# Writes DIR/STATUS last: "ok", or "failed: <what>" (the tests then skip loudly, naming it).
set -uo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
DIR=$1
mkdir -p "$DIR"
rm -f "$DIR/STATUS"
fail() {
    echo "failed: $*" >"$DIR/STATUS"
    echo "$0: $*" >&2
    exit 1
}

PYTHON=$(command -v python3) || fail "python3 not found"
if [ ! -x "$DIR/venv/bin/python" ]; then
    "$PYTHON" -m venv "$DIR/venv" >"$DIR/install.log" 2>&1 || fail "python3 -m venv (see $DIR/install.log)"
fi
if ! "$DIR/venv/bin/python" -c 'import git' 2>/dev/null || [ ! -x "$DIR/venv/bin/git-filter-repo" ]; then
    "$DIR/venv/bin/python" -m pip install --quiet --disable-pip-version-check GitPython git-filter-repo \
        >>"$DIR/install.log" 2>&1 || fail "pip install GitPython git-filter-repo (see $DIR/install.log)"
fi
if ! perl -MGit -e1 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y libgit-perl; } >>"$DIR/install.log" 2>&1 ||
            fail "apt-get install libgit-perl (see $DIR/install.log)"
    fi
    perl -MGit -e1 2>/dev/null || fail "perl's Git.pm is missing (Debian: libgit-perl)"
fi
echo ok >"$DIR/STATUS"
