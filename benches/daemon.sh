#!/usr/bin/env bash
# The daemon benchmark (issue 5): STREAMS short streams of REQUESTS `cat-blob` requests each, answered by
#   daemon   `cat-blobd connect` to one running `cat-blobd serve` (a new `connect` process per stream)
#   git      a fresh `git fast-import --cat-blob-fd=3` per stream
#   fresh    a fresh `cat-blobd --cat-blob-fd=3` per stream
#   plain    the same daemon, one plain socket connection per stream from one long-lived client (python3), as a
#            service that keeps running would use it: no process is started per stream
#   floor    `/bin/true` per stream: what starting any process costs here, the floor under the first three
# and, to see where `connect`'s own start-up goes:
#   version  `cat-blobd --version`: starting the binary, plus clap building the one-shot command line
#   nodaemon `cat-blobd connect` on a socket path that does not exist: starting the binary, parsing connect's
#            flags, collecting its fds, failing to connect
#   static   with STATIC=1: `connect` and `nodaemon` again with the static, non-PIE build of
#            scripts/build-static.sh (CAT_BLOBD_STATIC=path picks it): no dynamic loader, no relocations
# plus, once, the dynamic loader's own statistics (LD_DEBUG=statistics: relocations and time in ld.so).
# and prints, for each, the total time and p50/p99 per stream (for the first three a stream's time includes
# starting its process, as a frontend pays it), then the ratios. Each way is checked to give the same bytes as
# git on the first streams.
#
#   benches/daemon.sh [GIT_DIR] [STREAMS] [REQUESTS]
#
# GIT_DIR defaults to the `basic` test fixture (built by `cargo test`, or here with fixtures/make-fixtures.sh).
# CAT_BLOBD=path picks the binary (default: a release build of this checkout). One python3 process starts every
# measured process with posix_spawn (vfork + exec: no copy of a shell per stream) and times it to its exit, the
# ways interleaved stream by stream; each way's p50 is also given as a multiple of /bin/true's in the same run.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
streams=${2:-1000}
requests=${3:-10}
. "$(dirname "$0")/workdir.sh" daemon-bench

. "$here/benches/common.sh"

# The streams: REQUESTS blob ids each, walking the repository's blob list.
mkdir "$work/streams"
awk -v streams="$streams" -v requests="$requests" -v dir="$work/streams" '
    { ids[n++] = $0 }
    END {
        for (s = 0; s < streams; s++) {
            file = sprintf("%s/%d", dir, s)
            for (r = 0; r < requests; r++) printf "cat-blob %s\n", ids[(s * requests + r) % n] > file
            close(file)
        }
    }' "$work/blobs"

# git fast-import writes into its repository: give it a throwaway one that borrows the objects.
git init -q --bare "$work/oracle.git"
echo "$git_dir/objects" >"$work/oracle.git/objects/info/alternates"

"$CAT_BLOBD" serve --socket "$work/socket" --git-dir "$git_dir" 2>"$work/daemon.log" &
daemon_pid=$!
for _ in $(seq 200); do [ -S "$work/socket" ] && break; sleep 0.05; done
[ -S "$work/socket" ] || { cat "$work/daemon.log" >&2; exit 1; }

run_daemon() { "$CAT_BLOBD" connect --socket "$work/socket" --quiet --cat-blob-fd=3; }
run_git() { GIT_DIR=$work/oracle.git git fast-import --quiet --cat-blob-fd=3; }
run_fresh() { "$CAT_BLOBD" --git-dir "$git_dir" --quiet --cat-blob-fd=3; }

# Same bytes every way, on the first streams.
for s in 0 1 2; do
    run_git <"$work/streams/$s" 3>"$work/expected" >/dev/null
    for way in daemon fresh; do
        "run_$way" <"$work/streams/$s" 3>"$work/got" >/dev/null
        cmp -s "$work/expected" "$work/got" || { echo "$way: stream $s differs from git" >&2; exit 1; }
    done
done

python3 - "$work" >/dev/null <<'PY'
import socket, sys
work = sys.argv[1]
for s in range(3):
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(f"{work}/socket")
    conn.sendall(open(f"{work}/streams/{s}", "rb").read())
    conn.shutdown(socket.SHUT_WR)
    got = b"".join(iter(lambda: conn.recv(1 << 20), b""))
    open(f"{work}/plain.{s}", "wb").write(got)
PY
for s in 0 1 2; do
    GIT_DIR=$work/oracle.git git fast-import --quiet <"$work/streams/$s" >"$work/expected"
    cmp -s "$work/expected" "$work/plain.$s" || { echo "plain: stream $s differs from git" >&2; exit 1; }
done

# The ways that start a process per stream, interleaved: stream s is run by each way in turn before stream s+1
# (after a warm-up of 20), so that a change in the machine's load during the run weighs on every way alike and
# the ratios between ways in one run hold even on a busy machine. Each way is `name status env argv…` (status:
# the exit status it must end with; env: `-` or one VAR=value); one time per line in microseconds goes to
# `$work/times.<name>`. The stream is the process's stdin; stdout, stderr and fd 3 go to /dev/null.
measure_processes() {
    python3 - "$work" "$streams" "$@" <<'PY'
import os, sys, time
work, streams, specs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
ways = []
for spec in specs:
    name, status, env, *argv = spec.split("\x1f")
    environ = dict(os.environ)
    if env != "-":
        key, value = env.split("=", 1)
        environ[key] = value
    ways.append((name, int(status), environ, argv))
null = os.open("/dev/null", os.O_WRONLY)
times = {name: [] for name, *_ in ways}
for s in list(range(20)) + list(range(streams)):
    for name, expected, environ, argv in ways:
        stream = os.open(f"{work}/streams/{s}", os.O_RDONLY)
        actions = [(os.POSIX_SPAWN_DUP2, stream, 0), (os.POSIX_SPAWN_DUP2, null, 1),
                   (os.POSIX_SPAWN_DUP2, null, 2), (os.POSIX_SPAWN_DUP2, null, 3)]
        t0 = time.perf_counter_ns()
        pid = os.posix_spawn(argv[0], argv, environ, file_actions=actions)
        _, status = os.waitpid(pid, 0)
        times[name].append((time.perf_counter_ns() - t0) // 1000)
        os.close(stream)
        if os.waitstatus_to_exitcode(status) != expected:
            sys.exit(f"{argv}: stream {s} exited with status {status}")
for name, spent in times.items():
    with open(f"{work}/times.{name}", "w") as out:
        out.write("\n".join(map(str, spent[20:])) + "\n")
PY
}

# One way for measure_processes: name, exit status, one VAR=value or -, then the command.
way() {
    local IFS=$'\x1f'
    printf '%s' "$*"
}

measure_plain() {
    python3 - "$work" "$streams" >"$work/times.plain" <<'PY'
import socket, sys, time
work, streams = sys.argv[1], int(sys.argv[2])
data = [open(f"{work}/streams/{s}", "rb").read() for s in range(streams)]
times = []
for s in list(range(20)) + list(range(streams)):
    t0 = time.perf_counter_ns()
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(f"{work}/socket")
    conn.sendall(data[s])
    conn.shutdown(socket.SHUT_WR)
    while conn.recv(1 << 20):
        pass
    conn.close()
    times.append((time.perf_counter_ns() - t0) // 1000)
print("\n".join(map(str, times[20:])))
PY
}

summary() { # way -> "total_ms p50_ms p99_ms"
    sort -n "$work/times.$1" | awk '
        { t[NR] = $1; sum += $1 }
        END {
            p50 = t[int((NR - 1) * 0.50) + 1]; p99 = t[int((NR - 1) * 0.99) + 1]
            printf "%.1f %.3f %.3f\n", sum / 1000, p50 / 1000, p99 / 1000
        }'
}

echo "repository: $git_dir ($(wc -l <"$work/blobs") blobs); $streams streams of $requests cat-blob requests"
echo "binary: $CAT_BLOBD; $(git --version); $(nproc) cores"
git=$(type -P git)
static_ways=() static_names=
if [ "${STATIC:-}" = 1 ] || [ -n "${CAT_BLOBD_STATIC:-}" ]; then
    CAT_BLOBD_STATIC=${CAT_BLOBD_STATIC:-$("$here/scripts/build-static.sh")}
    echo "static binary: $CAT_BLOBD_STATIC"
    "$CAT_BLOBD_STATIC" connect --socket "$work/socket" --quiet --cat-blob-fd=3 <"$work/streams/0" 3>"$work/got" >/dev/null
    GIT_DIR=$work/oracle.git git fast-import --quiet --cat-blob-fd=3 <"$work/streams/0" 3>"$work/expected" >/dev/null
    cmp -s "$work/expected" "$work/got" || { echo "static: stream 0 differs from git" >&2; exit 1; }
    static_ways=(
        "$(way static 0 - "$CAT_BLOBD_STATIC" connect --socket "$work/socket" --quiet --cat-blob-fd=3)"
        "$(way nostatic 128 - "$CAT_BLOBD_STATIC" connect --socket "$work/no-such-socket" --quiet)"
    )
    static_names="static nostatic"
fi
measure_processes \
    "$(way daemon 0 - "$CAT_BLOBD" connect --socket "$work/socket" --quiet --cat-blob-fd=3)" \
    "$(way git 0 "GIT_DIR=$work/oracle.git" "$git" fast-import --quiet --cat-blob-fd=3)" \
    "$(way fresh 0 - "$CAT_BLOBD" --git-dir "$git_dir" --quiet --cat-blob-fd=3)" \
    "$(way floor 0 - "$(type -P true)")" \
    "$(way version 0 - "$CAT_BLOBD" --version)" \
    "$(way nodaemon 128 - "$CAT_BLOBD" connect --socket "$work/no-such-socket" --quiet)" \
    "${static_ways[@]}"
measure_plain
echo "dynamic loader, one run of connect:"
LD_DEBUG=statistics "$CAT_BLOBD" connect --socket "$work/socket" --quiet --cat-blob-fd=3 <"$work/streams/0" \
    3>/dev/null 2>&1 >/dev/null | sed -n 's/^ *[0-9]*: *//p' | grep -E 'total startup time|relocations' || true
printf '%-8s %12s %10s %10s %14s\n' way total_ms p50_ms p99_ms p50_vs_floor
read -r _ floor_p50 _ < <(summary floor)
for way in daemon git fresh plain floor version nodaemon $static_names; do
    read -r total p50 p99 < <(summary "$way")
    printf '%-8s %12s %10s %10s %13.2fx\n' "$way" "$total" "$p50" "$p99" "$(awk -v a="$p50" -v b="$floor_p50" 'BEGIN { print a / b }')"
    eval "total_$way=$total p50_$way=$p50"
done
awk -v d="$total_daemon" -v g="$total_git" -v f="$total_fresh" -v p="$total_plain" -v n="$total_floor" \
    -v dp="$p50_daemon" -v gp="$p50_git" -v fp="$p50_fresh" -v pp="$p50_plain" -v np="$p50_floor" \
    'BEGIN {
        printf "git fast-import per stream / daemon via connect: %.1fx total, %.1fx p50\n", g / d, gp / dp
        printf "fresh cat-blobd per stream / daemon via connect: %.1fx total, %.1fx p50\n", f / d, fp / dp
        printf "git fast-import per stream / daemon via plain:   %.1fx total, %.1fx p50\n", g / p, gp / pp
        printf "git fast-import per stream / /bin/true per stream (the ceiling for any process per stream): %.1fx total, %.1fx p50\n", g / n, gp / np
    }'
