#!/bin/sh
# Installs batchfit into a temporary DESTDIR, builds examples/sim_probe.c
# against that copy with `pkg-config --cflags --libs batchfit`, runs a probe
# on a sim device, and prints the program's last line (batch_size=N).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
# Under the build folder, not /tmp: /tmp may be mounted noexec, and the
# program built here must run.
scratch=${BATCHFIT_TEST_BUILD:-$root/build}
mkdir -p "$scratch"
tmp=$(mktemp -d "$scratch/install-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
# Installed first under another PREFIX from the same build: the second
# install must write its own paths into the .pc file (it once kept these).
for prefix in /opt/batchfit-first /usr/local; do
    dest="$tmp/dest"
    [ "$prefix" = /usr/local ] || dest="$tmp/first"
    make -s -C "$root" install DESTDIR="$dest" PREFIX="$prefix" BUILD="$tmp/build" \
        CC="${CC:-cc}" SANITIZE= >"$tmp/make.log" 2>&1 || { cat "$tmp/make.log" >&2; exit 1; }
    grep -qx "prefix=$prefix" "$dest$prefix/lib/pkgconfig/libbatchfit.pc" \
        || { echo "install_check: $prefix/lib/pkgconfig/libbatchfit.pc names another prefix" >&2; exit 1; }
done
for f in include/batchfit.h lib/libbatchfit.a lib/libbatchfit.so lib/libbatchfit.so.0 \
         lib/pkgconfig/libbatchfit.pc lib/pkgconfig/batchfit.pc bin/batchfit \
         share/man/man1/batchfit.1; do
    test -e "$tmp/dest/usr/local/$f" || { echo "install_check: missing $f" >&2; exit 1; }
done
PKG_CONFIG_PATH="$tmp/dest/usr/local/lib/pkgconfig"
PKG_CONFIG_SYSROOT_DIR="$tmp/dest"
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
# shellcheck disable=SC2046 # pkg-config output is a list of flags
"${CC:-cc}" -std=c11 $(pkg-config --cflags batchfit) "$root/examples/sim_probe.c" \
    -o "$tmp/sim_probe" $(pkg-config --libs batchfit)
# The program must run against the installed shared library, not a build tree.
LD_LIBRARY_PATH="$tmp/dest/usr/local/lib" ldd "$tmp/sim_probe" | grep -q "$tmp/dest/usr/local/lib/libbatchfit.so.0" \
    || { echo "install_check: not linked against the installed libbatchfit.so.0" >&2; exit 1; }
LD_LIBRARY_PATH="$tmp/dest/usr/local/lib" "$tmp/sim_probe" \
    "sim:capacity=10GiB,fixed=1GiB,per_sample=100MiB,granule=1MiB" 2>/dev/null | tail -n 1
