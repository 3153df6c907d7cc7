#!/bin/sh
# Installs what building and testing batchfit needs on Debian 12, only where
# it is missing: a C compiler, make, pkg-config; for the tests (--test, which
# `make test` passes, and --ci) Open MPI (the --mpi plugin and its tests),
# Python 3 with PyTorch and pytest (Debian's python3-torch, python3-pytest)
# and xmllint; with --ci also clang and valgrind for the sanitizer and leak
# runs. Needs root (or sudo) to install.
set -eu
want="gcc:gcc make:make pkg-config:pkgconf"
tests="mpicc:libopenmpi-dev mpirun:openmpi-bin xmllint:libxml2-utils"
case "${1:-}" in
--test) want="$want $tests" ;;
--ci) want="$want $tests clang:clang valgrind:valgrind" ;;
esac
missing=""
for pair in $want; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing="$missing ${pair#*:}"
done
# The Python tests run on Debian's interpreter, with Debian's packages.
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--ci" ]; then
    /usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || missing="$missing python3-torch"
    /usr/bin/python3 -c 'import pytest' >/dev/null 2>&1 || missing="$missing python3-pytest"
fi
[ -z "$missing" ] && exit 0
echo "install-deps: installing$missing" >&2
run=""
[ "$(id -u)" = 0 ] || run="sudo"
$run apt-get update -qq
# shellcheck disable=SC2086 # a list of package names
DEBIAN_FRONTEND=noninteractive $run apt-get install -y -qq $missing >/dev/null
