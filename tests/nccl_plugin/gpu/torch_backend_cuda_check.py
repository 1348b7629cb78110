# SPDX-License-Identifier: BSD-3-Clause
"""One rank of the GPU check's c10d step: the libreduce backend with CUDA tensors, as
`init_process_group("cpu:gloo,cuda:libreduce")` routes them (staged through host memory).

    RANK=r WORLD_SIZE=n MASTER_ADDR=127.0.0.1 MASTER_PORT=p PYTHONPATH=BUILD/python \
        python3 torch_backend_cuda_check.py [DIR]

(DIR is accepted for the same command line as the other checks and not used.) All-reduce (sum,
avg, PREMUL_SUM), all_gather_into_tensor and reduce_scatter_tensor of exact CUDA inputs, checked
element by element, then 3 DDP steps of an MLP on the GPU with the parameters compared across
ranks; prints "TORCH BACKEND CUDA CHECK PASSED" when all are right.
"""
import os
import sys

import torch
import torch.distributed as dist

import libreduce.torch  # noqa: F401


def check(name, got, want):
    if not torch.equal(got.cpu(), want.cpu()):
        print("FAILED %s: %d elements differ" % (name, int((got.cpu() != want.cpu()).sum())))
        return False
    return True


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    dist.init_process_group("cpu:gloo,cuda:libreduce", rank=rank, world_size=world)
    ok = True
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        base = torch.arange((1 << 20) + 3, dtype=torch.int64) % 13
        t = (base + rank + 1).to(dtype).cuda()
        dist.all_reduce(t)
        want = sum(base + r + 1 for r in range(world)).to(dtype)
        ok &= check("all_reduce %s" % dtype, t, want)
    t = torch.full((1000,), float(rank + 1), device="cuda")
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
    ok &= check("premul_sum", t, torch.full((1000,), 0.5 * world * (world + 1) / 2))
    out = torch.empty(world * 4, device="cuda")
    dist.all_gather_into_tensor(out, torch.full((4,), float(rank), device="cuda"))
    ok &= check("all_gather_into_tensor", out, torch.arange(world).repeat_interleave(4).float())
    part = torch.empty(2, device="cuda")
    dist.reduce_scatter_tensor(part, torch.ones(2 * world, device="cuda"), op=dist.ReduceOp.AVG)
    ok &= check("reduce_scatter_tensor avg", part, torch.ones(2))
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8)).cuda())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        g = torch.Generator().manual_seed(100 * step + rank)
        x = torch.randn(16, 64, generator=g).cuda()
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    everyone = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(everyone, flat)
    ok &= all(check("DDP parameters of rank %d" % r, e, flat) for r, e in enumerate(everyone))
    dist.destroy_process_group()
    print("TORCH BACKEND CUDA CHECK PASSED" if ok else "TORCH BACKEND CUDA CHECK FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
