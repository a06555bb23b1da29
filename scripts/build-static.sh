#!/usr/bin/env bash
# Builds cat-blobd statically linked and not position-independent, and prints the binary's path.
#
#   scripts/build-static.sh        # → target/static/<host>/release/cat-blobd
#
# Why: a `cat-blobd connect` client is started once per stream, so its start-up is on every stream's path. The
# default build is dynamically linked (ld.so maps libc and libgcc_s and resolves symbols) and position-independent
# (thousands of relative relocations, each page they touch copied). This build does neither: it starts as fast
# as /bin/true (see benches/daemon.sh, which measures it with STATIC=1). The cost: no ASLR for the binary's own
# code and data (libraries are inside it), and glibc's NSS (used only to expand `~user/` in config paths) loads
# the system's NSS modules at run time, which must match the glibc it was built with. Use it for the clients;
# the daemon can run either build.
#
# cargo applies RUSTFLAGS with --target to the target only: build scripts and proc-macros (which cannot be
# static) stay as they are. Needs glibc's static libc.a (Debian: libc6-dev) or a musl target.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
host=$(rustc -vV | sed -n 's/^host: //p')
RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static -C relocation-model=static" \
    cargo build --release --quiet --manifest-path "$here/Cargo.toml" --target "$host" --target-dir "$here/target/static"
echo "$here/target/static/$host/release/cat-blobd"
