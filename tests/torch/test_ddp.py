"""DistributedDataParallel over tether: 20 SGD steps of a small model must give, on every rank,
the parameters of single-process training on the concatenated batch, and those of the same
DDP run over gloo.

Each rank trains on its slice of one global batch with a mean loss; DDP averages the gradients,
which is the gradient of the mean loss over the whole batch. Small buckets make DDP send several
all-reduces per step while backward is still running. TETHER_TEST_DEVICE (default cpu) is where
the model and batches live (gloo stages CUDA tensors through host memory too).
"""
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS, PER_RANK = 20, 6
DEVICE = torch.device(os.environ.get("TETHER_TEST_DEVICE", "cpu"))


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                         nn.Linear(32, 4)).to(DEVICE)


def batches(size):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(PER_RANK * size, 8, generator=g).to(DEVICE),
             torch.randn(PER_RANK * size, 4, generator=g).to(DEVICE)) for _ in range(STEPS)]


def train(net, data, rank, size):
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    for x, y in data:
        part = len(x) // size
        mine = slice(rank * part, (rank + 1) * part)
        loss = nn.functional.mse_loss(net(x[mine]), y[mine])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()])


def test_ddp_matches_single_process_and_gloo(world):
    rank, size = world
    data = batches(size)
    reference = train(model(), data, 0, 1)
    over_tether = train(DDP(model(), bucket_cap_mb=0.002), data, rank, size)
    gloo = dist.new_group(backend="gloo")
    over_gloo = train(DDP(model(), process_group=gloo, bucket_cap_mb=0.002), data, rank, size)

    assert over_tether.device.type == DEVICE.type
    torch.testing.assert_close(over_tether, reference, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(over_tether, over_gloo, rtol=1e-5, atol=1e-6)
    # Every rank holds the same parameters (checked over gloo, independent of tether).
    everyone = [torch.empty_like(over_tether) for _ in range(size)]
    dist.all_gather(everyone, over_tether, group=gloo)
    for r, theirs in enumerate(everyone):
        assert torch.equal(theirs, over_tether), f"rank {r}'s parameters differ from rank {rank}'s"
    initial = torch.cat([p.detach().reshape(-1) for p in model().parameters()])
    assert (over_tether - initial).abs().max() > 1e-3, "training did not move the parameters"
