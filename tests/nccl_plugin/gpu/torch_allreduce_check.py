# SPDX-License-Identifier: BSD-3-Clause
"""One rank of the GPU check's PyTorch step: torch.distributed with backend "nccl" on the one
GPU, every rank its own "node" (distinct NCCL_HOSTID), NCCL loading libnccl-net-libreduce.so.

    RANK=r WORLD_SIZE=n MASTER_ADDR=127.0.0.1 MASTER_PORT=p python3 torch_allreduce_check.py [DIR]

(DIR is accepted for the same command line as nccl_allreduce_check and not used: torch's
rendezvous is MASTER_ADDR:MASTER_PORT.)

All-reduces of exact inputs in float32, bfloat16, float16 and int32 (sum) and float32 avg, checked
element by element; prints "TORCH ALLREDUCE CHECK PASSED" when all are right.
"""
import os
import sys
import time

import torch
import torch.distributed as dist


def expected(size, dtype, world):
    base = torch.arange(size, dtype=torch.int64) % 13
    total = sum(base + r + 1 for r in range(world))
    return total.to(dtype)


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    try:
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda:0"))
    except TypeError:  # torch < 2.3 has no device_id
        dist.init_process_group("nccl", rank=rank, world_size=world)
    ok = True
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int32):
        for size in (1, 1000, 1 << 20, (1 << 22) + 3):
            base = torch.arange(size, dtype=torch.int64) % 13
            t = (base + rank + 1).to(dtype).cuda()
            start = time.perf_counter()
            dist.all_reduce(t)
            torch.cuda.synchronize()
            ms = (time.perf_counter() - start) * 1e3
            wrong = int((t.cpu() != expected(size, dtype, world)).sum())
            print(f"rank {rank}: all_reduce {str(dtype):15} {size:9d}  {ms:8.2f} ms  {wrong} wrong")
            ok = ok and wrong == 0
    t = torch.full((1 << 20,), float(rank + 1), device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    want = (world + 1) / 2
    wrong = int((t.cpu() - want).abs().gt(1e-5).sum())
    print(f"rank {rank}: all_reduce avg float32 {wrong} wrong")
    ok = ok and wrong == 0
    dist.destroy_process_group()
    print(f"rank {rank}: TORCH ALLREDUCE CHECK {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
