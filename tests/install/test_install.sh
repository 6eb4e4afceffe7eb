#!/usr/bin/env bash
# tests/install/test_install.sh - `cmake --install` into a temporary prefix, then build a consumer with
# pkg-config and with find_package(tether), run both, and run the installed tether command.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
# sanitizer builds: the runtime the installed library needs, preloaded into what we run of it
run() { LD_LIBRARY_PATH="$libdir" LD_PRELOAD="${TETHER_TEST_PRELOAD:-}" "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
for f in include/tether.h bin/tether; do
    [ -e "$tmp/prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
libdir=$(dirname "$(find "$tmp/prefix" -name libtether.so | head -1)")
[ -e "$libdir/libtether.a" ] || { echo "not installed: libtether.a"; exit 1; }

# pkg-config
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -o "$tmp/consumer-pc" "$src/tests/install/consumer.c" $(pkg-config --cflags --libs tether)
run "$tmp/consumer-pc"

# find_package(tether)
mkdir "$tmp/proj"
cp "$src/tests/install/consumer.c" "$tmp/proj/"
cp "$src/tests/install/CMakeLists.consumer.txt" "$tmp/proj/CMakeLists.txt"
cmake -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/proj/build" >/dev/null
run "$tmp/proj/build/consumer"

run "$tmp/prefix/bin/tether" --version
echo "install: ok"
