# SPDX-License-Identifier: BSD-3-Clause
"""One rank of the multi-host tests: init_process_group("libreduce") from the launcher's
environment (MASTER_ADDR of another host), an all-reduce and an all-gather checked; prints
"HOSTS OK". RD_GROUP_TIMEOUT_S: the group's timeout (default: torch's, 30 minutes)."""

import datetime
import os

import torch
import torch.distributed as dist

import libreduce.torch  # noqa: F401


def main():
    timeout = os.environ.get("RD_GROUP_TIMEOUT_S")
    kwargs = {"timeout": datetime.timedelta(seconds=float(timeout))} if timeout else {}
    dist.init_process_group("libreduce", **kwargs)
    rank, size = dist.get_rank(), dist.get_world_size()
    t = torch.full((1000,), float(rank + 1))
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((1000,), size * (size + 1) / 2)), t
    parts = [torch.zeros(3) for _ in range(size)]
    dist.all_gather(parts, torch.full((3,), float(rank)))
    assert all(torch.equal(p, torch.full((3,), float(r))) for r, p in enumerate(parts)), parts
    dist.destroy_process_group()
    print("HOSTS OK")


if __name__ == "__main__":
    main()
