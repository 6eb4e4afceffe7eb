"""Subgroups of the tether world: new_group(ranks), new_subgroups, several groups in flight at once,
DDP on a subgroup, destroy_process_group(group), and many groups created and destroyed."""
import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from test_collectives import DEVICE, close, data, reduce_ref
from test_ddp import batches, model, train


def ends(size):
    """The last rank and rank 0, in that order (one rank in a world of one)."""
    return list(dict.fromkeys([size - 1, 0]))


def subsets(size):
    """Rank lists every rank passes to new_group, members or not."""
    lists = [list(range(0, size, 2)), ends(size), list(range(size))]
    if size > 1:
        lists.append(list(range(1, size, 2)))
    return lists


def test_new_group_all_reduce(world):
    rank, size = world
    for ranks in subsets(size):
        g = dist.new_group(ranks, backend="tether")
        members = sorted(set(ranks))  # torch orders a group's ranks
        if rank not in members:
            assert g == dist.GroupMember.NON_GROUP_MEMBER
            continue
        assert dist.get_backend(g) == "tether"
        assert dist.get_rank(g) == members.index(rank) and dist.get_world_size(g) == len(members)
        t = data(rank, 33, torch.float32, salt=len(members))
        dist.all_reduce(t, group=g)
        close(t, reduce_ref([data(r, 33, torch.float32, salt=len(members)) for r in members], "sum"))
        got = [torch.empty(5, dtype=torch.int64, device=DEVICE) for _ in members]
        dist.all_gather(got, data(rank, 5, torch.int64), group=g)
        for r, x in zip(members, got):
            close(x, data(r, 5, torch.int64))
        dist.destroy_process_group(g)
    dist.barrier()  # the world still works


def test_groups_in_flight_together(world):
    """Async all-reduces on overlapping groups and the world, queued before any is waited for."""
    rank, size = world
    evens = dist.new_group(list(range(0, size, 2)), backend="tether")
    last_first = dist.new_group(ends(size), backend="tether")
    works, checks = [], []
    for i in range(4):
        for g, members in ((evens, list(range(0, size, 2))), (last_first, sorted(ends(size))),
                           (None, list(range(size)))):
            if rank not in members:
                continue
            t = data(rank, 100 + i, torch.float32, salt=i)
            works.append(dist.all_reduce(t, group=g, async_op=True))
            checks.append((t, [data(r, 100 + i, torch.float32, salt=i) for r in members]))
    for w in works:
        w.wait()
    for t, inputs in checks:
        close(t, reduce_ref(inputs, "sum"))


def test_send_recv_in_a_subgroup(world):
    rank, size = world
    if size < 2:
        pytest.skip("needs two ranks")
    g = dist.new_group([0, size - 1], backend="tether")
    if rank in (0, size - 1):
        peer = size - 1 - rank  # a global rank, as torch takes it
        got = torch.empty(7, device=DEVICE)
        works = [dist.irecv(got, peer, group=g, tag=5),
                 dist.isend(data(rank, 7, torch.float32), peer, group=g, tag=5)]
        for w in works:
            w.wait()
        close(got, data(peer, 7, torch.float32))


def test_new_subgroups(world):
    rank, size = world
    if int(torch.__version__.split(".")[0]) < 2 and not torch.cuda.is_available():
        pytest.skip("torch 1.x's new_subgroups refuses to run without CUDA")
    group_size = 2 if size % 2 == 0 else 1
    mine, groups = dist.new_subgroups(group_size=group_size, backend="tether")
    assert len(groups) == size // group_size
    members = list(range(rank - rank % group_size, rank - rank % group_size + group_size))
    t = data(rank, 9, torch.float64)
    dist.all_reduce(t, group=mine)
    close(t, reduce_ref([data(r, 9, torch.float64) for r in members], "sum"))


def test_ddp_on_a_subgroup(world):
    """DDP over the even ranks (the others train nothing) equals single-process training on the
    batch of those ranks."""
    rank, size = world
    members = list(range(0, size, 2))
    g = dist.new_group(members, backend="tether")
    if rank not in members:
        return
    n = len(members)
    data_ = batches(n)
    reference = train(model(), data_, 0, 1)
    got = train(DDP(model(), process_group=g, bucket_cap_mb=0.002), data_, members.index(rank), n)
    torch.testing.assert_close(got, reference, rtol=1e-5, atol=1e-6)


def test_many_groups_created_and_destroyed(world):
    """Each with works still queued at destruction."""
    rank, size = world
    members = ends(size)
    for i in range(60):
        g = dist.new_group(members, backend="tether")
        if rank in members:
            for _ in range(3):
                dist.all_reduce(torch.ones(1000, device=DEVICE), group=g, async_op=True)
            t = torch.ones(3, device=DEVICE)
            dist.all_reduce(t, group=g)
            close(t, torch.full((3,), float(len(members))))
            dist.destroy_process_group(g)
