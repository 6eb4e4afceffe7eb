# tests/mlx/test_jaccl_hostfile.sh TETHER ALL_SUM SOFTVERBS - the JACCL hostfile of MLX's docs (list
# form, "rdma" lists, no "backend") under tether launch, over the verbs emulator: the job runs on
# rdma, as mlx.launch runs it on JACCL, not on a mesh over the ssh names.
. "$(dirname "$0")/lib.sh"
TETHER=${1:?usage: $0 tether all_sum libsoftverbs.so}
ALL_SUM=${2:?}
SOFTVERBS=${3:?}
# Both "hosts" are this machine (127.0.0.x): one rank each, as RDMA devices belong to hosts.
cat >"$WORK/jaccl.json" <<JSON
[
  {"ssh": "127.0.0.1", "ips": ["127.0.0.1"], "rdma": [null, "rdma_en1", "rdma_en2"]},
  {"ssh": "127.0.0.2", "ips": [], "rdma": ["rdma_en0", null, "rdma_en2"]},
  {"ssh": "127.0.0.3", "ips": [], "rdma": ["rdma_en0", "rdma_en1", null]}
]
JSON
env -i PATH="$PATH" TETHER_IBVERBS_LIB="$SOFTVERBS" SOFTVERBS_PROFILE=apple \
    SOFTVERBS_DEVICES="rdma_en0:10.0.%r.1,rdma_en1:10.1.%r.1,rdma_en2:10.2.%r.1" \
    timeout 60 "$TETHER" launch --hostfile "$WORK/jaccl.json" -- "$ALL_SUM" \
    </dev/null >"$WORK/out" 2>&1
echo $? >"$WORK/rc.0"
for r in 1 2; do cp "$WORK/rc.0" "$WORK/rc.$r"; done
for r in 0 1 2; do grep "^rank $r " "$WORK/out" >"$WORK/out.$r"; done
check_ranks 3 rdma || sed 's/^/  | /' "$WORK/out" >&2
[ $FAILS = 0 ]
