#!/bin/sh
# Installs what building and testing batchfit needs on Debian 12, only where
# it is missing: a C compiler, make, pkg-config, Open MPI (the --mpi plugin
# and its tests); with --ci also clang and valgrind for the sanitizer and
# leak runs. Needs root (or sudo) to install.
set -eu
want="gcc:gcc make:make pkg-config:pkgconf mpicc:libopenmpi-dev mpirun:openmpi-bin"
if [ "${1:-}" = "--ci" ]; then
    want="$want clang:clang valgrind:valgrind"
fi
missing=""
for pair in $want; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing="$missing ${pair#*:}"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing$missing" >&2
run=""
[ "$(id -u)" = 0 ] || run="sudo"
$run apt-get update -qq
# shellcheck disable=SC2086 # a list of package names
DEBIAN_FRONTEND=noninteractive $run apt-get install -y -qq $missing >/dev/null
