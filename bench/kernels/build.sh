#!/usr/bin/env bash
# bench/kernels/build.sh - build the reduction-kernel microbenchmark against a build dir's libtether.a.
# usage: bench/kernels/build.sh [BUILD_DIR]   (default: build-bench beside bench/)
# Prints the path of the binary (BUILD_DIR/bench-kernels). It includes the internal core/reduce.h,
# which is why it is not one of the `tether` command's sources.
# The library picks the kernels for the CPU at run time; bench-kernels --portable measures the
# portable C ones in the same binary.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${1:-$src/build-bench}
lib=$build/libtether.a
if [ ! -f "$lib" ]; then
  echo "bench/kernels/build.sh: $lib not found: build tether first (cmake --build $build)" >&2
  exit 1
fi
out=$build/bench-kernels
"${CC:-cc}" -std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -I"$src" -I"$src/include" \
  -o "$out" "$here/kernels.c" "$lib" $(pkg-config --libs jansson 2>/dev/null || echo -ljansson) -lpthread -ldl -lm
echo "$out"
