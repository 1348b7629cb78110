# SPDX-License-Identifier: BSD-3-Clause
"""One rank of the DDP comparison: trains the same model from the same seeds twice, once with
DistributedDataParallel over gloo and once over libreduce, and compares the parameters.

  ddp_worker.py DATA FIND_UNUSED STEPS
DATA: "exact" (integer inputs and a loss whose gradients are integers, so every order of
summation gives the same bits: the results must be identical) or "random" (a ReLU MLP on
random data: allclose). FIND_UNUSED: 0 or 1 (the model has a branch the loss never uses).
Prints "DDP OK max_abs_diff=..." on success.
"""

import datetime
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import libreduce.torch  # noqa: F401  (registers the backend)

DATA, FIND_UNUSED, STEPS = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])


class Model(nn.Module):
    def __init__(self, exact):
        super().__init__()
        self.exact = exact
        self.a = nn.Linear(16, 8)
        self.b = nn.Linear(8 if not exact else 16, 4)
        if FIND_UNUSED:
            self.unused = nn.Linear(16, 4)  # never in the loss: needs find_unused_parameters

    def forward(self, x):
        if self.exact:
            # Parallel branches summed: every gradient is a sum of integer inputs.
            return self.a(x).sum(dim=1) + self.b(x).sum(dim=1)
        return self.b(torch.relu(self.a(x))).sum(dim=1)


def batches(rank, exact):
    g = torch.Generator().manual_seed(1000 + rank)
    for _ in range(STEPS):
        if exact:
            yield torch.randint(-4, 5, (8, 16), generator=g).float(), None
        else:
            yield torch.randn(8, 16, generator=g), torch.randn(8, generator=g)


def train(group, rank, exact):
    torch.manual_seed(rank)  # different on every rank: DDP must broadcast rank 0's
    model = Model(exact)
    if exact:
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randint(-8, 9, p.shape).float() / 16)
    ddp = DDP(model, process_group=group, find_unused_parameters=FIND_UNUSED,
              bucket_cap_mb=0.0001)  # tiny buckets: several all-reduces per step
    opt = torch.optim.SGD(ddp.parameters(), lr=1.0 / 64 if exact else 0.05)
    for x, y in batches(rank, exact):
        opt.zero_grad()
        out = ddp(x)
        loss = out.sum() if exact else ((out - y) ** 2).mean()
        loss.backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def main():
    exact = DATA == "exact"
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=60)
    dist.init_process_group("gloo", timeout=timeout)
    rank, size = dist.get_rank(), dist.get_world_size()
    libreduce_group = dist.new_group(backend="libreduce", timeout=timeout)
    assert dist.get_backend(libreduce_group) == "libreduce"

    reference = train(None, rank, exact)  # the default group: gloo
    ours = train(libreduce_group, rank, exact)

    diff = max((a - b).abs().max().item() for a, b in zip(reference, ours))
    if exact:
        assert all(torch.equal(a, b) for a, b in zip(reference, ours)), diff
    else:
        assert all(torch.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(reference, ours)), diff

    # Every rank ends with the same parameters (gathered through libreduce).
    flat = torch.cat([p.reshape(-1) for p in ours])
    everyone = [torch.empty_like(flat) for _ in range(size)]
    dist.all_gather(everyone, flat, group=libreduce_group)
    assert all(torch.equal(everyone[0], t) for t in everyone), "ranks disagree"
    dist.barrier(group=libreduce_group)
    dist.destroy_process_group()
    print("DDP OK max_abs_diff=%g" % diff)


if __name__ == "__main__":
    main()
