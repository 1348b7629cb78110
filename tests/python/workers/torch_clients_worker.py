# SPDX-License-Identifier: BSD-3-Clause
"""One rank of the client-library tests: what PyTorch 2.x builds on a process group, run on
BACKEND (gloo or libreduce) from the same seed and data, so that the test can compare the two.

  torch_clients_worker.py SCENARIO OUT
fsdp2        an MLP sharded with fully_shard (FSDP2: all-gather of parameters, reduce-scatter of
             gradients with AVG), then with a gradient divide factor (PREMUL_SUM), trained a few
             steps with SGD
dtensor      DTensor redistribute over a 1-D mesh: Shard -> Replicate (all-gather),
             Partial -> Replicate (all-reduce), Partial -> Shard (reduce-scatter),
             Shard(0) -> Shard(1) (all-to-all)
functional   torch.distributed._functional_collectives, one call each and their _coalesced forms
compile_ddp  a torch.compile'd MLP under DistributedDataParallel, trained a few steps

Rank 0 writes every result tensor to OUT (torch.save of a dict); the test compares the files of
two backends. Inputs are small integers or come from a fixed seed: sums of two ranks do not
depend on the order they are added in, so 2-rank runs agree to the bit.
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist

if os.environ.get("BACKEND") == "libreduce":
    import libreduce.torch  # noqa: F401

SCENARIO, OUT = sys.argv[1], sys.argv[2]
STEPS = 3


def mlp(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(4, 16, generator=g), torch.randn(4, 8, generator=g)


def train(model, rank, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for step in range(STEPS):
        x, y = batch(rank, step)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.detach()


def fsdp2(rank, size):
    from torch.distributed.fsdp import fully_shard
    results = {}
    for variant, divide in (("avg", None), ("premul", 3.0)):
        model = mlp(0)
        for layer in (model[0], model[2]):
            fully_shard(layer)
        fully_shard(model)
        if divide is not None:
            model.set_gradient_divide_factor(divide)  # reduce-scatter with PREMUL_SUM(1/3)
        results[variant + "/loss"] = train(model, rank)
        for name, p in model.named_parameters():
            results["%s/%s" % (variant, name)] = p.full_tensor().detach().clone()
    return results


def dtensor(rank, size):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Partial, Replicate, Shard, distribute_tensor
    from torch.distributed.tensor import DTensor
    mesh = init_device_mesh("cpu", (size,))
    full = torch.arange(4 * size * 6, dtype=torch.float32).reshape(4 * size, 6)
    sharded = distribute_tensor(full, mesh, [Shard(0)])
    results = {"shard_to_replicate": sharded.redistribute(mesh, [Replicate()]).to_local()}
    results["shard0_to_shard1"] = sharded.redistribute(mesh, [Shard(1)]).full_tensor()
    local = torch.full((size * 2, 3), float(rank + 1))
    partial = DTensor.from_local(local, mesh, [Partial()])
    results["partial_to_replicate"] = partial.redistribute(mesh, [Replicate()]).to_local()
    results["partial_to_shard"] = partial.redistribute(mesh, [Shard(0)]).full_tensor()
    return results


def functional(rank, size):
    import torch.distributed._functional_collectives as fc
    group = dist.group.WORLD
    mine = torch.arange(2 * size, dtype=torch.float32) + 10 * rank
    results = {
        "all_reduce": fc.all_reduce(mine, "sum", group),
        "all_reduce_max": fc.all_reduce(mine, "max", group),
        "all_gather_tensor": fc.all_gather_tensor(mine, 0, group),
        "reduce_scatter_tensor": fc.reduce_scatter_tensor(mine, "sum", 0, group),
        "all_to_all_single": fc.all_to_all_single(mine, None, None, group),
        "broadcast": fc.broadcast(mine, 0, group),
    }
    coalesced = fc.all_reduce_coalesced([mine, mine * 2], "sum", group)
    gathered = fc.all_gather_into_tensor_coalesced([mine, mine[:2]], group)
    scattered = fc.reduce_scatter_tensor_coalesced([mine, mine * 3], "sum", [0, 0], group)
    for name, tensors in (("all_reduce_coalesced", coalesced),
                          ("all_gather_into_tensor_coalesced", gathered),
                          ("reduce_scatter_tensor_coalesced", scattered)):
        for i, t in enumerate(tensors):
            results["%s/%d" % (name, i)] = t
    return {name: fc.wait_tensor(t).clone() if isinstance(t, torch.Tensor) else t
            for name, t in results.items()}


def compile_ddp(rank, size):
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(mlp(0))
    compiled = torch.compile(model)
    results = {"loss": train(compiled, rank)}
    results.update({name: p.detach().clone() for name, p in model.module.named_parameters()})
    return results


def main():
    torch.set_num_threads(1)
    dist.init_process_group(os.environ["BACKEND"], timeout=datetime.timedelta(seconds=120))
    rank, size = dist.get_rank(), dist.get_world_size()
    results = {"fsdp2": fsdp2, "dtensor": dtensor, "functional": functional,
               "compile_ddp": compile_ddp}[SCENARIO](rank, size)
    if rank == 0:
        torch.save(results, OUT)
    dist.barrier()
    dist.destroy_process_group()
    print("%s OK" % SCENARIO.upper())
    if os.environ["BACKEND"] == "gloo":
        # The reference run ends here: torch 2.11's gloo can leave a worker thread joinable at
        # interpreter exit ("terminate called without an active exception", about 1 run in 25
        # of dtensor), which is torch's, not the result's. libreduce's runs exit normally, so
        # its own teardown stays under test.
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
