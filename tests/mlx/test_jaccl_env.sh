# tests/mlx/test_jaccl_env.sh ALL_SUM SOFTVERBS DEVICES - MLX's JACCL environment and nothing else
# (MLX_RANK, MLX_JACCL_COORDINATOR, MLX_IBV_DEVICES; no size: the device matrix says it) over the
# verbs emulator: tether_init("any") must form the rdma group, as MLX's init() forms JACCL.
. "$(dirname "$0")/lib.sh"
ALL_SUM=${1:?usage: $0 all_sum libsoftverbs.so devices_n3.json}
SOFTVERBS=${2:?}
DEVICES=${3:?}
EMU="rdma_en0:10.0.%r.1,rdma_en1:10.1.%r.1,rdma_en2:10.2.%r.1"
run_ranks 3 "$ALL_SUM" MLX_JACCL_COORDINATOR=127.0.0.1:$(port_base) MLX_IBV_DEVICES="$DEVICES" \
    TETHER_IBVERBS_LIB="$SOFTVERBS" SOFTVERBS_PROFILE=apple SOFTVERBS_DEVICES="$EMU"
check_ranks 3 rdma
[ $FAILS = 0 ]
