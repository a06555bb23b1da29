# Sourced by the daemon benchmarks (benches/daemon.sh, benches/many-clients.sh): a scratch directory `$work`
# named after `$1`, and the daemon whose pid the script puts in `daemon_pid`; both are gone when the script exits.
work=$(mktemp -d "${TMPDIR:-/tmp}/cat-blobd-$1.XXXXXX")
daemon_pid=
cleanup() {
    if [ -n "$daemon_pid" ]; then kill -TERM "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
