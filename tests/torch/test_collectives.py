"""Every collective of the tether backend against a reference computed locally with torch.

Rank r's input is made by data(r, ...), so every rank can build all inputs and compute what the
collective must give without communicating. TETHER_TEST_DEVICE (default cpu; cuda, mps) is where
every tensor lives: accelerator tensors are staged through host memory by the backend.
"""
import datetime
import os

import pytest
import torch
import torch.distributed as dist

import tether_torch

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int16, torch.int32, torch.int64, torch.bool, torch.complex64]
DEVICE = torch.device(os.environ.get("TETHER_TEST_DEVICE", "cpu"))
OPS = {dist.ReduceOp.SUM: "sum", dist.ReduceOp.PRODUCT: "prod", dist.ReduceOp.MIN: "min",
       dist.ReduceOp.MAX: "max", dist.ReduceOp.AVG: "avg"}


def host_data(rank, n, dtype, salt=0):
    """Small values so sums and products stay exact in every dtype (bool: a pattern)."""
    g = torch.Generator().manual_seed(1000 * rank + salt)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    if dtype == torch.complex64:
        return torch.complex(torch.randint(-2, 3, (n,), generator=g).float(),
                             torch.randint(-2, 3, (n,), generator=g).float())
    low = 0 if dtype == torch.uint8 else -2
    return torch.randint(low, 3, (n,), generator=g).to(dtype)


def data(rank, n, dtype, salt=0):
    """Rank rank's input of n elements, on DEVICE."""
    return host_data(rank, n, dtype, salt).to(DEVICE)


def empty(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device=DEVICE)


def reduce_ref(xs, op):
    """The reduction of the list xs, computed in a wide type and cast back."""
    dtype = xs[0].dtype
    if dtype == torch.bool:
        stack = torch.stack(xs)
        return stack.any(0) if op in ("sum", "max") else stack.all(0)
    wide = torch.complex128 if dtype.is_complex else torch.float64
    stack = torch.stack([x.to(wide) for x in xs])
    if op == "sum":
        out = stack.sum(0)
    elif op == "avg":
        out = stack.sum(0) / len(xs)
    elif op == "prod":
        out = stack.prod(0)
    elif op == "min":
        out = stack.min(0).values
    else:
        out = stack.max(0).values
    return out.to(dtype)  # values are small: exact in every dtype


def applicable(dtype, op):
    if dtype.is_complex:  # torch itself refuses PRODUCT, MIN and MAX on complex tensors
        return op in ("sum", "avg")
    if op == "avg":
        return dtype.is_floating_point
    return True


def close(got, want):
    assert got.device.type == DEVICE.type, f"result on {got.device}, expected {DEVICE}"
    got, want = got.cpu(), want.cpu()
    if got.dtype in (torch.float16, torch.bfloat16):
        torch.testing.assert_close(got.float(), want.float(), rtol=1e-2, atol=1e-2)
    else:
        assert torch.equal(got, want), f"got {got}\nwant {want}"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", list(OPS), ids=list(OPS.values()))
def test_all_reduce(world, dtype, op):
    rank, size = world
    name = OPS[op]
    if not applicable(dtype, name):
        with pytest.raises((ValueError, RuntimeError)):
            dist.all_reduce(data(rank, 5, dtype), op=op)
        return
    t = data(rank, 37, dtype)
    dist.all_reduce(t, op=op)
    close(t, reduce_ref([data(r, 37, dtype) for r in range(size)], name))


def test_all_reduce_non_contiguous(world):
    rank, size = world
    base = data(rank, 40, torch.float32).view(8, 5)
    t = base.t()  # a transposed view: written back through the view
    dist.all_reduce(t)
    want = reduce_ref([data(r, 40, torch.float32) for r in range(size)], "sum").view(8, 5).t()
    close(t, want)
    close(base, want.t())


def test_all_reduce_empty(world):
    t = empty(0)
    dist.all_reduce(t)
    assert t.numel() == 0


def test_async_ops_complete_in_order(world):
    rank, size = world
    ts = [data(rank, 100 + i, torch.float32, salt=i) for i in range(8)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    for w in works:
        assert w.wait()
    for i, t in enumerate(ts):
        close(t, reduce_ref([data(r, 100 + i, torch.float32, salt=i) for r in range(size)], "sum"))


def test_future_holds_the_result(world):
    rank, size = world
    t = data(rank, 9, torch.float64)
    fut = dist.all_reduce(t, async_op=True).get_future()
    (got,) = fut.wait()
    close(got, reduce_ref([data(r, 9, torch.float64) for r in range(size)], "sum"))


def test_all_reduce_coalesced(world):
    rank, size = world
    ts = [data(rank, n, torch.float32, salt=n) for n in (3, 0, 17, 4)]
    dist.all_reduce_coalesced(ts)
    for n, t in zip((3, 0, 17, 4), ts):
        close(t, reduce_ref([data(r, n, torch.float32, salt=n) for r in range(size)], "sum"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16, torch.bool], ids=str)
def test_broadcast(world, dtype):
    rank, size = world
    for root in range(size):
        t = data(rank, 21, dtype, salt=root)
        dist.broadcast(t, src=root)
        close(t, data(root, 21, dtype, salt=root))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("op", list(OPS), ids=list(OPS.values()))
def test_reduce(world, dtype, op):
    rank, size = world
    name = OPS[op]
    if not applicable(dtype, name):
        return
    for root in range(size):
        t = data(rank, 9, dtype, salt=root)
        dist.reduce(t, dst=root, op=op)
        if rank == root:
            close(t, reduce_ref([data(r, 9, dtype, salt=root) for r in range(size)], name))
        else:  # the others' tensors stay as they were
            close(t, data(rank, 9, dtype, salt=root))


def test_gather(world):
    rank, size = world
    for root in range(size):
        out = [empty(3, 2, dtype=torch.int64) for _ in range(size)] if rank == root else None
        dist.gather(data(rank, 6, torch.int64, salt=root).view(3, 2), out, dst=root)
        if rank == root:
            for r in range(size):
                close(out[r], data(r, 6, torch.int64, salt=root).view(3, 2))


def test_scatter(world):
    rank, size = world
    for root in range(size):
        ins = [data(r, 5, torch.float64, salt=root) for r in range(size)] if rank == root else None
        t = empty(5, dtype=torch.float64)
        dist.scatter(t, ins, src=root)
        close(t, data(rank, 5, torch.float64, salt=root))


def test_all_gather(world):
    rank, size = world
    out = [empty(2, 3, dtype=torch.int32) for _ in range(size)]
    dist.all_gather(out, data(rank, 6, torch.int32).view(2, 3))
    for r in range(size):
        close(out[r], data(r, 6, torch.int32).view(2, 3))


def test_all_gather_into_tensor(world):
    rank, size = world
    out = empty(size * 7, dtype=torch.float64)
    dist.all_gather_into_tensor(out, data(rank, 7, torch.float64))
    close(out, torch.cat([data(r, 7, torch.float64) for r in range(size)]))


def test_all_gather_coalesced(world):
    rank, size = world
    shapes = [(2,), (3, 2)]
    ins = [data(rank, 2, torch.float32), data(rank, 6, torch.float32, salt=1).view(3, 2)]
    outs = [[empty(s) for s in shapes] for _ in range(size)]
    dist.all_gather_coalesced(outs, ins)
    for r in range(size):
        close(outs[r][0], data(r, 2, torch.float32))
        close(outs[r][1], data(r, 6, torch.float32, salt=1).view(3, 2))


@pytest.mark.parametrize("op", [dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.AVG],
                         ids=["sum", "max", "avg"])
def test_reduce_scatter_tensor(world, op):
    rank, size = world
    t = data(rank, 5 * size, torch.float32)
    out = empty(5)
    dist.reduce_scatter_tensor(out, t, op=op)
    want = reduce_ref([data(r, 5 * size, torch.float32) for r in range(size)], OPS[op])
    close(out, want[5 * rank:5 * rank + 5])


def test_reduce_scatter_list(world):
    rank, size = world
    ins = [data(rank, 4, torch.int64, salt=j) for j in range(size)]
    out = empty(4, dtype=torch.int64)
    dist.reduce_scatter(out, ins)
    close(out, reduce_ref([data(r, 4, torch.int64, salt=rank) for r in range(size)], "sum"))


def test_all_to_all_single_equal(world):
    rank, size = world
    t = data(rank, 3 * size, torch.float32)
    out = empty(3 * size)
    dist.all_to_all_single(out, t)
    close(out, torch.cat([data(r, 3 * size, torch.float32)[3 * rank:3 * rank + 3]
                          for r in range(size)]))


def sends(src, dst):
    """Rows rank src sends to rank dst in the uneven test (0 included)."""
    return (src + 2 * dst) % 3


def test_all_to_all_single_uneven(world):
    rank, size = world
    in_splits = [sends(rank, d) for d in range(size)]
    out_splits = [sends(s, rank) for s in range(size)]
    t = data(rank, 2 * sum(in_splits), torch.float32, salt=7).view(-1, 2)
    out = empty(sum(out_splits), 2)
    dist.all_to_all_single(out, t, out_splits, in_splits)
    want = []
    for s in range(size):
        theirs = data(s, 2 * sum(sends(s, d) for d in range(size)), torch.float32, salt=7).view(-1, 2)
        start = sum(sends(s, d) for d in range(rank))
        want.append(theirs[start:start + sends(s, rank)])
    close(out, torch.cat(want))


def test_all_to_all_list(world):
    rank, size = world
    ins = [data(rank, j + 1, torch.int32, salt=j) for j in range(size)]
    outs = [empty(rank + 1, dtype=torch.int32) for _ in range(size)]
    dist.all_to_all(outs, ins)
    for s in range(size):
        close(outs[s], data(s, rank + 1, torch.int32, salt=rank))


def test_send_recv_ring(world):
    rank, size = world
    if size == 1:
        pytest.skip("send/recv needs two ranks")
    right, left = (rank + 1) % size, (rank - 1) % size
    # Even ranks send first, odd ranks receive first: no pair waits on each other.
    got = empty(11, dtype=torch.float64)
    if rank % 2 == 0:
        dist.send(data(rank, 11, torch.float64), right)
        dist.recv(got, left)
    else:
        dist.recv(got, left)
        dist.send(data(rank, 11, torch.float64), right)
    close(got, data(left, 11, torch.float64))


def test_isend_irecv(world):
    rank, size = world
    if size == 1:
        pytest.skip("send/recv needs two ranks")
    if rank == 0:
        works = [dist.isend(data(0, 5, torch.int64, salt=d), d) for d in range(1, size)]
    else:
        got = empty(5, dtype=torch.int64)
        works = [dist.irecv(got, 0)]
    for w in works:
        w.wait()
    if rank != 0:
        close(got, data(0, 5, torch.int64, salt=rank))


BIG = 1 << 20  # elements: 4 MiB of float32, more than socket buffers hold (sends wait for receives)


def skip_if_blocking_p2p_only():
    """The mpi backend runs point to point as blocking calls in turn (docs/torch.md)."""
    if tether_torch._C.world_backend() == "mpi":
        pytest.skip("the mpi backend offers blocking point to point only")


def test_receives_posted_before_sends(world):
    """Every rank posts its receives first, then its sends, as batch_isend_irecv lets people do:
    nothing may wait in a queue behind a receive."""
    skip_if_blocking_p2p_only()
    rank, size = world
    if size == 1:
        pytest.skip("send/recv needs two ranks")
    got = {p: empty(BIG) for p in range(size) if p != rank}
    works = [dist.irecv(got[p], p, tag=3) for p in got]
    works += [dist.isend(data(rank, BIG, torch.float32, salt=p), p, tag=3) for p in got]
    for w in works:
        w.wait()
    for p in got:
        close(got[p], data(p, BIG, torch.float32, salt=rank))


def test_batch_isend_irecv_receives_first(world):
    skip_if_blocking_p2p_only()
    rank, size = world
    if size == 1:
        pytest.skip("send/recv needs two ranks")
    right, left = (rank + 1) % size, (rank - 1) % size
    got = empty(BIG)
    ops = [dist.P2POp(dist.irecv, got, left), dist.P2POp(dist.isend, data(rank, BIG, torch.float32), right)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    close(got, data(left, BIG, torch.float32))


def test_tags_received_in_another_order(world):
    """Rank 0 sends tags 1, 2 and 2 again; the others take tag 2's two messages (in order) before
    tag 1's, with a collective in between while tag 1 is still outstanding."""
    skip_if_blocking_p2p_only()
    rank, size = world
    if size == 1:
        pytest.skip("send/recv needs two ranks")
    if rank == 0:
        works = [dist.isend(data(0, BIG, torch.float32, salt=10 * p + k), p, tag=tag)
                 for p in range(1, size) for k, tag in enumerate((1, 2, 2))]
    else:
        second, third = empty(BIG), empty(BIG)
        dist.recv(second, 0, tag=2)
        dist.recv(third, 0, tag=2)
        first = empty(BIG)
        works = [dist.irecv(first, 0, tag=1)]
    t = torch.ones(4, device=DEVICE)
    dist.all_reduce(t)  # runs while the receive of tag 1 may still be in flight
    for w in works:
        w.wait()
    close(t, torch.full((4,), float(size)))
    if rank != 0:
        close(first, data(0, BIG, torch.float32, salt=10 * rank))
        close(second, data(0, BIG, torch.float32, salt=10 * rank + 1))
        close(third, data(0, BIG, torch.float32, salt=10 * rank + 2))


def test_recv_from_any_source(world):
    """Rank 0 takes 3 messages of tag 5 from every other rank with recv(src=None), the first of the
    last rank's by a directed recv: each reports its sender, and a sender's messages come in the
    order sent. Then each sender's tag 6 message, sent after, by irecv(src=None) all in flight at
    once (not over mpi, whose blocking point to point keeps no tags)."""
    rank, size = world
    if size == 1:
        pytest.skip("send/recv needs two ranks")
    K, n = 3, 1000
    tags_kept = tether_torch._C.world_backend() != "mpi"
    if rank != 0:
        for k in range(K):
            dist.send(data(rank, n, torch.float32, salt=k), 0, tag=5)
        if tags_kept:
            dist.send(torch.full((4,), float(rank), device=DEVICE), 0, tag=6)
        return
    got = empty(n)
    assert dist.recv(got, size - 1, tag=5) == size - 1
    close(got, data(size - 1, n, torch.float32, salt=0))
    following = {p: 0 for p in range(1, size)}
    following[size - 1] = 1
    for _ in range(K * (size - 1) - 1):
        src = dist.recv(got, tag=5)
        close(got, data(src, n, torch.float32, salt=following[src]))
        following[src] += 1
    assert following == {p: K for p in range(1, size)}
    if tags_kept:
        bufs = [empty(4) for _ in range(1, size)]
        works = [dist.irecv(b, tag=6) for b in bufs]
        for w in works:
            w.wait()
        sources = [w._source_rank() for w in works]
        assert sorted(sources) == list(range(1, size))
        for b, src in zip(bufs, sources):
            close(b, torch.full((4,), float(src)))


def sparse_of(rank, shape):
    """Rank rank's sparse COO tensor: indices along dimension 0, each with a value of shape[1:]
    (a hybrid tensor); three of them, one index twice (uncoalesced); none at all on rank 1."""
    if rank == 1:
        return torch.sparse_coo_tensor(torch.empty(1, 0, dtype=torch.int64),
                                       torch.empty(0, *shape[1:]), shape)
    rows = torch.tensor([[rank % shape[0], (rank + 1) % shape[0], rank % shape[0]]])
    values = torch.stack([torch.full(shape[1:], float(rank + k + 1)) for k in range(3)])
    return torch.sparse_coo_tensor(rows, values, shape)


@pytest.mark.parametrize("shape", [(5, 3), (7, 2, 2)])
def test_sparse_all_reduce(world, shape):
    """Sparse COO CPU tensors are summed in place, as gloo does."""
    if DEVICE.type != "cpu":
        pytest.skip("sparse all-reduce takes CPU tensors")
    rank, size = world
    t = sparse_of(rank, shape)
    dist.all_reduce(t)
    assert t.is_sparse
    want = sum(sparse_of(r, shape).to_dense() for r in range(size))
    close(t.to_dense(), want)
    with pytest.raises(ValueError, match="sparse tensors are summed only"):
        dist.all_reduce(t, op=dist.ReduceOp.MAX)


def test_barrier(world):
    dist.barrier()


def test_monitored_barrier(world):
    """torch refuses it for backends not named gloo; tether_torch lets it through. Its failures
    (a rank that does not come) are tested by PyTorch's suite (torch.suite2_gates)."""
    skip_if_blocking_p2p_only()
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=20))
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=20), wait_all_ranks=True)


def test_bad_arguments_raise_at_the_call(world):
    rank, size = world
    with pytest.raises(ValueError, match="tether all_gather_into_tensor"):
        dist.all_gather_into_tensor(empty(size * 3 + 1), empty(3))
    with pytest.raises(ValueError, match="tether allreduce: AVG needs a floating-point"):
        dist.all_reduce(empty(2, dtype=torch.int64), op=dist.ReduceOp.AVG)
    with pytest.raises(ValueError, match="tether gather: expected"):
        dist.gather(empty(1), [empty(1)] * (size + 1), dst=rank)
    if size == 1:
        with pytest.raises(ValueError, match="tether recvAnysource: a group of size 1"):
            dist.recv(empty(1))  # from any source: nobody to receive from
    if size > 1:
        with pytest.raises(ValueError, match="tether send: tag -1 is negative"):
            dist.send(empty(1), (rank + 1) % size, tag=-1)
    # The group is still usable after argument errors.
    t = torch.ones(3, device=DEVICE)
    dist.all_reduce(t)
    close(t, torch.full((3,), float(size)))


def test_second_tether_world_is_refused(world):
    rank, size = world
    with pytest.raises(RuntimeError, match="already has a tether world"):
        tether_torch._C.create_process_group(rank, size, datetime.timedelta(seconds=10))
    dist.barrier()  # the world still works
