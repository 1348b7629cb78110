# SPDX-License-Identifier: BSD-3-Clause
"""One rank of the backend's group-life tests: how torch 2.x creates, splits, configures and
ends libreduce groups.

  torch_groups_worker.py SCENARIO
groups     init through "cpu:libreduce" with pg_options, the options as torch reports them,
           new_group of all ranks but the last, split_group into halves, PREMUL_SUM, the
           coalescing manager's fast path (one coalesced call for a list), set_timeout, the
           sequence number; prints "GROUPS OK".
mixed      "cpu:gloo,cuda:libreduce": the CUDA backend is libreduce's, CPU tensors go to gloo;
           prints "MIXED OK".
failure    the last rank exits abruptly; the others' all-reduce raises and runs the abort hook,
           get_error() says COMM_ERROR, abort() fails what follows at once, shutdown() ends the
           group; prints "FAILURE OK".
dispatched what torch's ProcessGroupWithDispatchedCollectivesTests checks of a backend, at any
           world size (1 included): the group made from a FileStore, every collective
           reached through torch's dispatcher with CPU tensors, all_reduce_coalesced,
           all_to_all_single; prints "DISPATCHED OK".
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

import libreduce.torch

SCENARIO = sys.argv[1]
CPU = torch.device("cpu")
TORCH_VERSION = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def raises(fn, text):
    try:
        fn()
    except RuntimeError as e:
        expect(text in str(e), "message %r lacks %r" % (str(e), text))
        return
    raise AssertionError("no error for %s" % text)


def backend_of(group):
    return group._get_backend(CPU)


def premul_sum(rank, size):
    # FSDP divides gradients this way: every contribution scaled, then summed.
    for factor in (0.5, torch.tensor(0.25, dtype=torch.float64)):
        t = torch.full((5,), float(rank + 1))
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(factor))
        want = float(factor) * size * (size + 1) / 2
        expect(torch.allclose(t, torch.full((5,), want)), "premul all_reduce %s" % t)
    inp = torch.arange(2 * size, dtype=torch.float32) + rank
    keep = inp.clone()
    out = torch.zeros(2)
    dist.reduce_scatter_tensor(out, inp, op=dist._make_nccl_premul_sum(2.0))
    rows = torch.stack([torch.arange(2 * size, dtype=torch.float32) + r for r in range(size)])
    want = 2.0 * rows.sum(0)[2 * rank:2 * rank + 2]
    expect(torch.equal(out, want), "premul reduce_scatter %s != %s" % (out, want))
    expect(torch.equal(inp, keep), "reduce_scatter_tensor changed its input")
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.int32), op=dist._make_nccl_premul_sum(2.0))
    except RuntimeError as e:
        expect("floating-point" in str(e), str(e))
    else:
        raise AssertionError("PREMUL_SUM on int32 did not raise")


def coalesced(rank, size):
    # Inside the coalescing manager torch collects the calls and makes one coalesced call.
    outs = [torch.zeros(size * 3), torch.zeros(size * 2, dtype=torch.float64)]
    with dist._coalescing_manager(async_ops=True) as cm:
        dist.all_gather_into_tensor(outs[0], torch.full((3,), float(rank)))
        dist.all_gather_into_tensor(outs[1], torch.full((2,), rank + 0.5, dtype=torch.float64))
    cm.wait()
    expect(torch.equal(outs[0], torch.arange(size, dtype=torch.float32).repeat_interleave(3)),
           "coalesced all_gather_into_tensor 0: %s" % outs[0])
    expect(torch.equal(outs[1], (torch.arange(size) + 0.5).double().repeat_interleave(2)),
           "coalesced all_gather_into_tensor 1: %s" % outs[1])
    parts = [torch.zeros(2), torch.zeros(1, dtype=torch.int64)]
    with dist._coalescing_manager(async_ops=True) as cm:
        dist.reduce_scatter_tensor(parts[0], torch.ones(2 * size) * (rank + 1))
        dist.reduce_scatter_tensor(parts[1], torch.arange(size, dtype=torch.int64) * 0 + rank)
    cm.wait()
    expect(torch.equal(parts[0], torch.full((2,), size * (size + 1) / 2)), "coalesced rs 0")
    expect(parts[1].item() == size * (size - 1) // 2, "coalesced rs 1")


def groups(rank, size):
    options = libreduce.torch.Options(wire_dtype="none")
    dist.init_process_group("cpu:libreduce", pg_options=options,
                            timeout=datetime.timedelta(seconds=60))
    world = backend_of(dist.group.WORLD)
    expect(isinstance(world, libreduce.torch.ProcessGroupLibreduce), type(world).__name__)
    if hasattr(world, "options"):  # torch >= 2.12 binds getBackendOptions
        expect(world.options.wire_dtype == "none", "options: %r" % world.options.wire_dtype)
        expect(world.options._timeout == datetime.timedelta(seconds=60), "options timeout")
    # A subgroup of every rank but the last: a communicator of its own.
    members = list(range(size - 1))
    sub = dist.new_group(members, pg_options=libreduce.torch.Options(wire_dtype="bf16"))
    if rank in members:
        t = torch.full((3,), float(rank + 1))
        dist.all_reduce(t, group=sub)
        expect(torch.equal(t, torch.full((3,), float(len(members) * (len(members) + 1) // 2))),
               "new_group all_reduce %s" % t)
        if hasattr(backend_of(sub), "options"):
            expect(backend_of(sub).options.wire_dtype == "bf16", "new_group's pg_options")
    else:
        expect(sub == dist.GroupMember.NON_GROUP_MEMBER, "a non-member got a group")
    # split_group: halves, each its own communicator split from WORLD. torch 2.11's
    # split_group splits CUDA groups only; 2.15's any device.
    if TORCH_VERSION >= (2, 15):
        halves = [list(range(0, size // 2)), list(range(size // 2, size))]
        mine = dist.split_group(split_ranks=halves)
        half = halves[0] if rank in halves[0] else halves[1]
        t = torch.full((2,), float(rank))
        dist.all_reduce(t, group=mine)
        expect(torch.equal(t, torch.full((2,), float(sum(half)))), "split_group %s" % t)
    premul_sum(rank, size)
    coalesced(rank, size)
    before = world._get_sequence_number_for_group()
    dist.all_reduce(torch.ones(1))
    expect(world._get_sequence_number_for_group() == before + 1, "sequence number")
    world.set_timeout(datetime.timedelta(seconds=7))
    if hasattr(world, "options"):
        expect(world.options._timeout == datetime.timedelta(seconds=7), "set_timeout")
    if hasattr(world, "get_error"):
        expect(world.get_error().name == "SUCCESS", "get_error on a healthy group")
    dist.barrier()
    dist.destroy_process_group()
    print("GROUPS OK")


def mixed(rank, size):
    dist.init_process_group("cpu:gloo,cuda:libreduce", timeout=datetime.timedelta(seconds=60))
    pg = dist.group.WORLD
    expect(isinstance(pg._get_backend(torch.device("cuda")), libreduce.torch.ProcessGroupLibreduce),
           "cuda backend")
    expect(type(pg._get_backend(CPU)).__name__ == "ProcessGroupGloo", "cpu backend")
    t = torch.full((2,), float(rank))
    dist.all_reduce(t)  # a CPU tensor: gloo's
    expect(torch.equal(t, torch.full((2,), float(size * (size - 1) // 2))), "mixed all_reduce")
    dist.destroy_process_group()
    print("MIXED OK")


def failure(rank, size):
    dist.init_process_group("libreduce", timeout=datetime.timedelta(seconds=20))
    world = backend_of(dist.group.WORLD)
    hook_calls = []
    if hasattr(world, "register_abort_hook"):  # torch 2.12+
        expect(world.supports_abort_hooks, "abort hooks")
        world.register_abort_hook(7, lambda: hook_calls.append("failure"))
    dist.all_reduce(torch.ones(4))
    if rank == size - 1:
        os._exit(0)  # dies without leaving the group
    time.sleep(0.5)
    raises(lambda: dist.all_reduce(torch.ones(1 << 14)), "libreduce allreduce failed")
    if hasattr(world, "register_abort_hook"):
        expect(hook_calls, "no abort hook ran for the failed all-reduce")
    if hasattr(world, "get_error"):
        expect(world.get_error().name == "COMM_ERROR", "get_error: %s" % world.get_error())
    start = time.monotonic()
    world.abort()
    raises(lambda: dist.all_reduce(torch.ones(2)), "libreduce allreduce failed")
    expect(time.monotonic() - start < 5, "abort and the failed call took %.1f s"
           % (time.monotonic() - start))
    world.shutdown()
    raises(lambda: dist.all_reduce(torch.ones(2)), "the group was aborted")
    print("FAILURE OK")
    sys.stdout.flush()
    os._exit(0)  # the group cannot be left cleanly with a dead member


def dispatched(rank, size):
    store = dist.FileStore(os.environ["RD_STORE_FILE"], size)
    dist.init_process_group("libreduce", world_size=size, rank=rank, store=store)
    pg = dist.distributed_c10d._get_default_group()
    # torch names the ProcessGroup of any registered backend "custom"; the group's backend
    # says its own name.
    expect((pg.rank(), pg.size(), dist.get_backend()) == (rank, size, "libreduce"),
           "group %s" % [pg.rank(), pg.size(), dist.get_backend()])
    t = torch.zeros(2, 2)
    dist.reduce(t, 0)
    dist.broadcast(t, size - 1)
    dist.all_reduce(t)
    dist.all_gather([torch.zeros(2, 2) for _ in range(size)], t)
    dist.reduce_scatter(t, [torch.ones(2, 2) for _ in range(size)])
    expect(torch.equal(t, torch.full((2, 2), float(size))), "reduce_scatter %s" % t)
    dist.barrier()
    outs = [torch.zeros(2, 2) for _ in range(size)]
    dist.all_to_all(outs, [torch.full((2, 2), float(rank)) for _ in range(size)])
    expect(all(torch.equal(o, torch.full((2, 2), float(r))) for r, o in enumerate(outs)), "a2a")
    piece = torch.zeros(2, 2)
    dist.scatter(piece, [torch.full((2, 2), float(r)) for r in range(size)] if rank == 0 else None)
    expect(torch.equal(piece, torch.full((2, 2), float(rank))), "scatter")
    tensors = [torch.ones(10, 10)]
    dist.all_reduce_coalesced(tensors, dist.ReduceOp.SUM)
    expect(torch.equal(tensors[0], torch.ones(10, 10) * size), "all_reduce_coalesced")
    out = torch.zeros(2 * size, 2)
    dist.all_to_all_single(out, torch.full((2 * size, 2), float(rank)))
    expect(torch.equal(out, torch.arange(size).repeat_interleave(2).float()[:, None].expand(-1, 2)),
           "all_to_all_single %s" % out)
    dist.destroy_process_group()
    print("DISPATCHED OK")


def main():
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    {"groups": groups, "mixed": mixed, "failure": failure,
     "dispatched": dispatched}[SCENARIO](rank, size)


if __name__ == "__main__":
    main()
