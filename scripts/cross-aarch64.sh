#!/usr/bin/env bash
# scripts/cross-aarch64.sh - build tether for 64-bit ARM Linux on an x86-64 Debian machine and run its
# arm64 code under qemu-aarch64, so CI executes the arm64 instructions (the NEON reduction kernels
# first) that the macOS cross-build only links.
#
# Toolchain: Debian's gcc-aarch64-linux-gnu, the arm64 multiarch packages (libc6:arm64,
# libjansson-dev:arm64, libcmocka-dev:arm64) and qemu-user; installed here if missing (as root, or
# with sudo).
# cmake/aarch64-linux-gnu.cmake sets qemu-aarch64 as CMake's cross-compiling emulator, so ctest runs
# the arm64 test programs through it. Builds go to build-aarch64/.
#
# What runs, in this order (each must pass):
#   1. the NEON kernels are vector code: objdump of core/reduce.c's object shows the Advanced SIMD
#      instructions each hot kernel is written with;
#   2. every unit test (ctest -R '^unit\.'), the reduction tests among them: the NEON set against
#      the portable one bit for bit, and that the dispatch picks NEON (with half arithmetic and
#      BFCVT on qemu's default CPU, again with half arithmetic only on a Neoverse N1, and without
#      either on a Cortex-A72); and the in-process collective suite (ctest -R '^algo\.': ranks are
#      threads over an in-memory transport);
#   3. the collective suite across processes (tests/coll coll_suite): `tether launch` (arm64, under
#      qemu) starting arm64 ranks under qemu over loopback TCP, mesh and ring backends, N=1..4,
#      every all-reduce algorithm, bf16 on the wire, large messages.
# What does not run: the other ctest tests (their scripts and launches start the test programs
# directly, which an x86-64 kernel cannot exec without qemu registered in binfmt_misc, which a
# container cannot do), the RDMA emulator, the sanitizer builds. docs/macos.md says so too.
#
# Usage: scripts/cross-aarch64.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$root/build-aarch64
jobs=$(nproc 2>/dev/null || echo 2)
qemu=(qemu-aarch64 -L /) # as cmake/aarch64-linux-gnu.cmake says why

say() { echo "cross-aarch64: $*" >&2; }
die() {
    say "error: $*"
    exit 1
}
run() {
    echo "+ $*" >&2
    "$@"
}

# The cross compiler, qemu and the arm64 libraries; Debian only (dpkg multiarch).
host_tools() {
    local missing=() p sudo=""
    for p in aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu aarch64-linux-gnu-objdump:binutils-aarch64-linux-gnu \
        qemu-aarch64:qemu-user cmake:cmake pkg-config:pkg-config; do
        command -v "${p%%:*}" >/dev/null 2>&1 || missing+=("${p#*:}")
    done
    for p in libc6-dev-arm64-cross libc6:arm64 libjansson-dev:arm64 libcmocka-dev:arm64; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
    [ "$(id -u)" = 0 ] || sudo=sudo
    export DEBIAN_FRONTEND=noninteractive
    dpkg --print-foreign-architectures | grep -qx arm64 || run $sudo dpkg --add-architecture arm64
    run $sudo apt-get update -qq
    run $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# 1. Each hot kernel of the neon set holds the vector instructions it is written with (a register
# named v<n>.<lanes> is an Advanced SIMD operand); the integer kernels are the portable loops, which
# GCC must have vectorised.
check_vector_code() {
    local obj f want body fails=0
    obj=$(find "$build" -path '*tether_objs.dir/core/reduce.c.o' | head -n 1)
    [ -n "$obj" ] || die "core/reduce.c's object is not in $build"
    echo "== objdump: the hot kernels are Advanced SIMD code"
    while read -r f want; do
        body=$(aarch64-linux-gnu-objdump -d --no-show-raw-insn --disassemble="$f" "$obj" | grep -P '^\s+[0-9a-f]+:')
        if [ -z "$body" ]; then
            say "$f is not in $obj"
            fails=$((fails + 1))
        elif grep -Eq "$want" <<<"$body"; then
            echo "  $f: $(wc -l <<<"$body") instructions, $(grep -Ec '\bv[0-9]+\.' <<<"$body") on vectors, has /$want/"
        else
            say "$f has no instruction matching /$want/"
            fails=$((fails + 1))
        fi
    done <<'EOF'
f32_sum_neon fadd\s+v[0-9]+\.4s
f32_max_neon fmax\s+v[0-9]+\.4s
f64_prod_neon fmul\s+v[0-9]+\.2d
f16_sum_neon fcvtn2?\s+v[0-9]+\.[48]h
f16_sum_fp16 fadd\s+v[0-9]+\.8h
f16_max_neon cmgt\s+v[0-9]+\.8h
bf16_sum_neon addhn\s+v[0-9]+\.4h
bf16_sum_bfcvt bfcvtn2?\s+v[0-9]+\.[48]h
wire_sum_neon shll2?\s+v[0-9]+\.4s
to_bf16_neon addhn\s+v[0-9]+\.4h
to_bf16_bfcvt bfcvtn2?\s+v[0-9]+\.[48]h
round_bf16_bfcvt bfcvtn2?\s+v[0-9]+\.[48]h
i32_sum add\s+v[0-9]+\.4s
u8_max umax\s+v[0-9]+\.16b
EOF
    [ $fails -eq 0 ] || die "$fails kernel(s) without their vector instructions"
}

host_tools
start=$(date +%s)
run cmake -S "$root" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" >/dev/null
if ! run cmake --build "$build" -j "$jobs" >"$build/build.log" 2>&1; then
    grep -v '^\[' "$build/build.log" >&2
    die "the build failed (warnings are errors)"
fi
say "built in $(($(date +%s) - start)) s"
check_vector_code

echo "== unit tests and the in-process collective suite under qemu-aarch64 (ctest -R '^(unit|algo)\.')"
ctest --test-dir "$build" -V -j "$jobs" --timeout 300 -R '^(unit|algo)\.' >"$build/ctest.log" 2>&1 ||
    {
        cat "$build/ctest.log" >&2
        die "tests failed under qemu ($build/ctest.log)"
    }
grep -E '^ *[0-9]+/[0-9]+ Test +#|tests passed, ' "$build/ctest.log"
programs=$(sed -n 's/.* tests passed, 0 tests failed out of \([0-9]*\)$/\1/p' "$build/ctest.log")
# each program's cmocka summary, in ctest's verbose log
cases=$(sed -n 's/.*\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' "$build/ctest.log" | awk '{ n += $1 } END { print n + 0 }')
# qemu's default CPU (max) has FEAT_FP16 and FEAT_BF16, so ctest compared the neon+fp16+bf16 set;
# a Neoverse N1 has FEAT_FP16 only (the neon+fp16 set), a Cortex-A72 neither (the neon set, whose
# float16 kernels are FCVTL/FCVTN): each against the portable kernels, and test_select checks the
# pick.
for cpu in neoverse-n1:neon+fp16 cortex-a72:neon; do
    out=$(qemu-aarch64 -L / -cpu "${cpu%%:*}" "$build/tests/unit/test_reduce" 2>&1) || {
        echo "$out" >&2
        die "test_reduce failed on a ${cpu%%:*} under qemu"
    }
    n=$(sed -n 's/.*\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' <<<"$out")
    echo "  test_reduce on a ${cpu%%:*} (the ${cpu#*:} set): $n cases passed"
    cases=$((cases + n))
    programs=$((programs + 1))
done

echo "== the collective suite across processes: tether launch (arm64) starting arm64 ranks (tests/coll)"
# The launcher runs under qemu and starts qemu (a host program) for each rank: what ctest's coll.*
# tests run, less the ranks' own emulator. Cross-memory attach is off (TETHER_TCP_CMA_MIN=0):
# process_vm_readv would be given guest addresses, which qemu-user does not translate for the other
# process. No spinning (TETHER_SPIN_US=0): emulated ranks share two cores.
launches=0
coll() { # RANKS BACKEND [K=V] -- SUITE-ARGS...
    local n=$1 b=$2 env=() out
    shift 2
    while [ "$1" != -- ]; do
        env+=(--env "$1")
        shift
    done
    shift
    out=$(TETHER_TIMEOUT=60 timeout 300 "${qemu[@]}" "$build/tether" launch -n "$n" --backend "$b" \
        --env TETHER_TCP_CMA_MIN=0 --env TETHER_SPIN_US=0 "${env[@]}" -- \
        "${qemu[@]}" "$build/tests/coll/coll_suite" "$@" 2>&1) || {
        echo "$out" >&2
        die "coll_suite $* on $n ranks over $b (${env[*]}) failed under qemu"
    }
    grep -q 'all checks passed' <<<"$out" || die "coll_suite $* on $n ranks over $b: no pass line"
    launches=$((launches + 1))
}
for b in mesh ring; do
    for n in 1 2 3 4; do coll "$n" "$b" -- ; done
    for algo in ring tree butterfly direct neighbor; do coll 4 "$b" TETHER_ALLREDUCE_ALGO=$algo -- --quick; done
    coll 3 "$b" TETHER_WIRE_DTYPE=bf16 -- --quick
    coll 2 "$b" -- --large
    echo "  $b: N=1..4, every all-reduce algorithm at N=4, bf16 on the wire, large messages: passed"
done

echo "== aarch64: $programs test program runs ($cases cmocka cases) and $launches launched collective suites" \
    "passed under qemu-aarch64; $(($(date +%s) - start)) s"
