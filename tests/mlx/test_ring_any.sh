# tests/mlx/test_ring_any.sh ALL_SUM - an MLX ring hostfile on a loopback "ring" where only
# neighbours reach each other, started with MLX's variables only (MLX_RANK, MLX_HOSTFILE):
# tether_init("any") must form the ring, as MLX's init() does; a full mesh cannot form there.
#
# The cables, in MLX's ring hostfile convention (a rank's entry holds its end of the cable from
# its left neighbour, which connects to it): the cable from rank i-1 to rank i is 127.10.i.0/24,
# and rank i listens on 127.10.i.1. Each rank may use only the addresses of its own two cables
# (mccl's interface filter, MCCL_IFACE_PRIORITY): a non-neighbour has no cable to reach.
. "$(dirname "$0")/lib.sh"
ALL_SUM=${1:?usage: $0 all_sum}
N=4
base=$(port_base)
hosts=""
for i in $(seq 0 $((N - 1))); do
    hosts="$hosts${hosts:+, }[\"127.10.$i.1:$((base + i))\"]"
    printf -v "rank_env_$i" 'MCCL_IFACE_PRIORITY=127.10.%d.,127.10.%d.' "$i" $(((i + 1) % N))
done
echo "[$hosts]" >"$WORK/ring.json"

run_ranks $N "$ALL_SUM" MLX_HOSTFILE="$WORK/ring.json"
check_ranks $N ring

# The same cables refuse a mesh: the test's ring is one only neighbours can form.
run_ranks $N "$ALL_SUM" MLX_HOSTFILE="$WORK/ring.json" TETHER_BACKEND=mesh TETHER_TIMEOUT=5
if [ "$(cat "$WORK/rc.0")" != 0 ] && grep -q "TETHER_IFACE_PRIORITY" "$WORK/out.0"; then
    pass "a mesh cannot form on these cables"
else
    fail "a mesh formed where only neighbours are cabled:"
    sed 's/^/  | /' "$WORK/out.0" >&2
fi
[ $FAILS = 0 ]
