#!/usr/bin/env bash
# lab/kernels/insns.sh - instructions per element of the arm64 reduction kernels, portable and
# NEON sets, counted under qemu-aarch64 (no arm64 machine needed; counts, not time: qemu says
# nothing of an Apple core's speed). Each figure is (instructions at 2N - at N) / N elements, less
# the same for the set-up alone (filling the inputs), with qemu logging every executed instruction
# (-singlestep -d exec,nochain).
# usage: lab/kernels/insns.sh [BUILD_DIR]   (default: build-aarch64, from scripts/cross-aarch64.sh)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${1:-$src/build-aarch64}
out=$build/lab/lab_insns # lab/CMakeLists.txt
[ -x "$out" ] || {
    echo "insns.sh: $out not found: run scripts/cross-aarch64.sh first" >&2
    exit 1
}
n=4096
# qemu's CPU: max has FEAT_FP16 and FEAT_BF16 (the neon+fp16+bf16 set), neoverse-n1 FEAT_FP16 only
# (neon+fp16), cortex-a72 neither (neon)
cpu=max
count() { # SET KERNEL DTYPE OP N
    qemu-aarch64 -L / -cpu $cpu -singlestep -d exec,nochain -D /dev/stdout "$out" "$@" | grep -c '^Trace'
}
delta() { # SET KERNEL DTYPE OP: instructions at 2N less at N
    echo $(($(count "$@" $((2 * n))) - $(count "$@" $n)))
}
per_element() { # SET KERNEL DTYPE OP
    local setup=${base[$3]:-}
    [ -n "$setup" ] || setup=$(delta "$1" none "$3" 0)
    base[$3]=$setup
    awk -v d=$(($(delta "$@") - setup)) -v n=$n 'BEGIN { printf "%.2f", d / n }'
}
declare -A base
names=(bool int8 uint8 int16 uint16 int32 uint32 int64 uint64 float16 bfloat16 float32 float64)
ops=(sum prod max min)
printf '%-8s %-9s %-5s %9s %9s %9s %14s\n' kernel dtype op portable neon neon+fp16 neon+fp16+bf16
row() { # KERNEL DTYPE OP
    local p a72 n1 bf16
    p=$(per_element portable "$@")
    bf16=$(per_element fast "$@")
    cpu=neoverse-n1
    n1=$(per_element fast "$@")
    cpu=cortex-a72
    a72=$(per_element fast "$@")
    cpu=max
    printf '%-8s %-9s %-5s %9s %9s %9s %14s\n' "$1" "${names[$2]}" "${ops[$3]}" "$p" "$a72" "$n1" "$bf16"
}
for dt in 11 12 9 10; do
    for op in 0 1 2 3; do row reduce $dt $op; done
done
for dt in 5 7 2; do row reduce $dt 0; done
row wire 11 0
row wire 11 2
row to_bf16 10 0
