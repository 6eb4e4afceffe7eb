#!/usr/bin/env bash
# bindings/torch/scripts/device_test.sh - build tether and tether_torch against the PyTorch of a
# machine that lacks jansson and cmocka (and perhaps pytest), then run the torch tests there. Made
# for a GPU machine with a pip PyTorch 2.x (Ubuntu 24.04, no network): what it lacks travels as
# Debian 12 .debs, fetched here with
#   mkdir -p DEBS && cd DEBS && apt-get download libjansson4 libjansson-dev libcmocka0 \
#     libcmocka-dev python3-pytest python3-pluggy python3-iniconfig python3-py python3-attr \
#     python3-exceptiongroup python3-packaging
# and used there, from the source root:
#   DEBS=/path/to/DEBS bindings/torch/scripts/device_test.sh [CTEST_REGEX]
# The .debs are unpacked into /tmp/tether-deps (never into /); the build goes to build-device/.
# CTEST_REGEX picks the tests (default: every torch test).
set -euo pipefail
: "${DEBS:?set DEBS to the folder of .debs}"
tests="${1:-^torch\.}"
PY=$(command -v python3)
DEPS=/tmp/tether-deps
mkdir -p "$DEPS"
for f in "$DEBS"/*.deb; do dpkg -x "$f" "$DEPS"; done
LIBDIR="$DEPS/usr/lib/x86_64-linux-gnu"
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$DEPS"
export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# pytest from the .debs only where the interpreter has none (they are pure Python).
if ! "$PY" -c "import pytest" 2>/dev/null; then
  export PYTHONPATH="$DEPS/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}"
fi
echo "== $(uname -srm); $(gcc --version | head -1); $(cmake --version | head -1)"
"$PY" -c "import sys, torch, pytest; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.device_count(), 'pytest', pytest.__version__)"
jobs=$(nproc)
echo "== the C library"
# No MPI plugins: PKG_CONFIG_SYSROOT_DIR, set for the .debs, would also prefix the paths of the
# machine's own MPI (its ompi-c.pc), and the torch tests need none.
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTETHER_TORCH_PYTHON="$PY" \
  -DTETHER_MPI_PLUGINS=OFF >/dev/null
cmake --build build-device -j "$jobs" >/dev/null
echo "== the torch extension, then ctest -R '$tests'"
cd build-device
ctest --output-on-failure -j "$((jobs / 4 > 0 ? jobs / 4 : 1))" --timeout 600 -R "$tests"
