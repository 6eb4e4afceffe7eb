#!/usr/bin/env bash
# tests/fuzz/run.sh - build the libFuzzer harnesses (clang, ASan+UBSan) and run each for a bounded
# time from its seed corpus (tests/fuzz/corpus/NAME; what the fuzzer adds goes to the build
# directory, never into the tree). A crash, leak or timeout fails the run and leaves the
# reproducer in BUILD/fuzz-out/NAME-crash-*; replay it with BUILD/tests/fuzz/NAME FILE.
# Usage: tests/fuzz/run.sh [BUILD_DIR]      (default build-fuzz)
#        FUZZ_SECONDS=N  seconds per harness (default 25); FUZZ_ONLY=NAME  one harness;
#        FUZZ_JOBS=J  harnesses at a time (default: one per core)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-fuzz}
secs=${FUZZ_SECONDS:-25}
harnesses=(fuzz_hostfile fuzz_tcp_link fuzz_rdma_side fuzz_probe fuzz_waitstate)
[ -n "${FUZZ_ONLY:-}" ] && harnesses=("$FUZZ_ONLY")

CC=${FUZZ_CC:-clang} cmake -S . -B "$build" -DTETHER_FUZZ=ON -DTETHER_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target "${harnesses[@]}" >/dev/null

# A peer may announce a point-to-point message of up to half this machine's memory before anyone
# asks for it, and the receiver allocates it (backends/net/frame.c, tether__rxcache_limit): that is
# by design, so allocations up to that bound (plus 1 GiB) are not the fuzzer's out-of-memory;
# resident memory stays limited (-rss_limit_mb: 4 GiB, as ASan shadows such buffers; 1.2 GiB seen).
malloc_mb=$(($(getconf _PHYS_PAGES) / 2 * $(getconf PAGESIZE) / 1048576 + 1024))

out=$build/fuzz-out
mkdir -p "$out"

# One harness; its report is printed after it ends (harnesses run side by side: FUZZ_JOBS at a
# time, default one per core, so CI's fuzz phase takes about secs x harnesses / cores).
fuzz_one() {
    local h=$1 work=$out/corpus-$1
    mkdir -p "$work"
    if ! "$build/tests/fuzz/$h" -max_total_time="$secs" -timeout=20 -malloc_limit_mb="$malloc_mb" \
        -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="$out/$h-" "$work" "tests/fuzz/corpus/$h" >"$out/$h.log" 2>&1; then
        echo "== fuzz $h for ${secs}s: FAILED"
        tail -n 40 "$out/$h.log"
        echo "fuzz: $h FAILED; reproducer: $(ls "$out/$h-"* 2>/dev/null | head -1)" >&2
        : >"$out/$h.failed"
        return 1
    fi
    # the last status line (executions, coverage, corpus) and the executions per second
    echo "== fuzz $h for ${secs}s"
    grep -E '^#[0-9]+[[:space:]]+DONE' "$out/$h.log" | tail -1 || tail -n 3 "$out/$h.log"
    grep -E 'stat::(number_of_executed_units|average_exec_per_sec)' "$out/$h.log" || true
}

# A harness that fails leaves NAME.failed: the verdict, as wait -n's status is no record of it
# (a job that ends before wait -n is called is reaped unreported; wait -n then says 127, no job).
jobs_max=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
rm -f "$out"/*.failed
running=0
for h in "${harnesses[@]}"; do
    if [ "$running" -ge "$jobs_max" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    fuzz_one "$h" &
    running=$((running + 1))
done
wait
failed=("$out"/*.failed)
[ -e "${failed[0]}" ] && exit 1
exit 0
