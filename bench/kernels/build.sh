#!/usr/bin/env bash
# bench/kernels/build.sh - build the reduction-kernel microbenchmark against a build dir's libtether.a.
# usage: bench/kernels/build.sh [BUILD_DIR]   (default: build-bench beside bench/)
# Prints the path of the binary (BUILD_DIR/bench-kernels). It includes the internal core/reduce.h,
# which is why it is not one of the `tether` command's sources.
# Also builds BUILD_DIR/bench-kernels-v3: the same core/reduce.c compiled for x86-64-v3 (AVX2, F16C,
# FMA) and linked ahead of the library, to measure what a per-CPU build of the kernels would gain.
# Only on x86-64 CPUs that have those features; its path is printed as a second line.
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
if [ "$(uname -m)" = x86_64 ] && grep -qw avx2 /proc/cpuinfo && grep -qw f16c /proc/cpuinfo; then
  obj=$build/bench-kernels-reduce-v3.o
  "${CC:-cc}" -std=c11 -O3 -march=x86-64-v3 -D_GNU_SOURCE -I"$src" -I"$src/include" -I"$src/core" \
    -c -o "$obj" "$src/core/reduce.c"
  "${CC:-cc}" -std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -I"$src" -I"$src/include" \
    -o "$out-v3" "$here/kernels.c" "$obj" "$lib" \
    $(pkg-config --libs jansson 2>/dev/null || echo -ljansson) -lpthread -ldl -lm
  echo "$out-v3"
fi
