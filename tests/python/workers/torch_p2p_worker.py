# SPDX-License-Identifier: BSD-3-Clause
"""One rank of the point-to-point and all-to-all tests of the c10d backend "libreduce".

  torch_p2p_worker.py SCENARIO [TIMEOUT_S]
p2p          send / recv / isend / irecv with tags received out of order, recv from any rank,
             batch_isend_irecv around the ring, every dtype, a message of several pieces, views;
             prints "P2P OK".
alltoall     all_to_all_single with even, uneven and empty splits, all_to_all with tensors of
             different sizes, gather and scatter, futures; prints "ALLTOALL OK".
monitored    libreduce.torch.monitored_barrier passes when every rank comes; then the last
             rank stays away and rank 0 raises naming it, with and without wait_all_ranks;
             prints "MONITORED OK" (rank 0) or "STAYED AWAY" (the last rank).
hooks        DDP communication hooks (allreduce, fp16 and bf16 compression, PowerSGD) train the
             same model through libreduce and through a gloo group of the same ranks; the
             parameters must agree; prints "HOOKS OK".
dead_peer    the last rank exits abruptly; the others' recv from it raises within the group's
             timeout naming it; prints "RAISED after S s: ...".
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

import libreduce.torch  # noqa: F401

SCENARIO = sys.argv[1]
TIMEOUT_S = float(sys.argv[2]) if len(sys.argv) > 2 else 60


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def values(sender, receiver, tag, n=5, dtype=torch.float32):
    """What @p sender sends @p receiver under @p tag: says who, to whom and which message."""
    base = torch.arange(n, dtype=torch.float64) + 1000 * sender + 100 * receiver + tag
    if dtype == torch.bool:
        return (base.to(torch.int64) % 2).to(torch.bool)
    if dtype.is_complex:
        return torch.complex(base, -base).to(dtype)
    return base.to(dtype)


def p2p(rank, size):
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    # Tags: sent 3, 1, 2 and received 2, 3, 1 (non-blocking, so the order is free).
    sends = [dist.isend(values(rank, nxt, tag), nxt, tag=tag) for tag in (3, 1, 2)]
    got = {tag: torch.zeros(5) for tag in (2, 3, 1)}
    recvs = [dist.irecv(got[tag], prv, tag=tag) for tag in got]
    for w in sends + recvs:
        w.wait()
    for tag, t in got.items():
        expect(torch.equal(t, values(prv, rank, tag)), "tag %d from %d: %s" % (tag, prv, t))
    # Two messages with one tag arrive in the order sent.
    if rank == 0:
        for i in range(2):
            dist.send(values(0, 1, 7 + i), 1, tag=7)
    elif rank == 1:
        for i in range(2):
            t = torch.zeros(5)
            dist.recv(t, 0, tag=7)
            expect(torch.equal(t, values(0, 1, 7 + i)), "same tag, message %d" % i)
    # Every dtype, and a view that is not contiguous.
    for dtype in (torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int64,
                  torch.bool, torch.complex64):
        w = dist.isend(values(rank, nxt, 4, dtype=dtype), nxt, tag=4)
        t = torch.zeros(5, dtype=dtype)
        dist.recv(t, prv, tag=4)
        w.wait()
        expect(torch.equal(t, values(prv, rank, 4, dtype=dtype)), "dtype %s" % dtype)
    w = dist.isend(values(rank, nxt, 5, n=20).reshape(4, 5).t(), nxt, tag=5)
    col = torch.zeros(4, 5).t()  # a non-contiguous destination
    dist.recv(col, prv, tag=5)
    w.wait()
    expect(torch.equal(col, values(prv, rank, 5, n=20).reshape(4, 5).t()), "views")
    # Several pieces (the library cuts messages into 8 MiB pieces).
    big = 3 * (1 << 20) + 17
    w = dist.isend(values(rank, nxt, 6, n=big), nxt, tag=6)
    t = torch.zeros(big)
    dist.recv(t, prv, tag=6)
    w.wait()
    expect(torch.equal(t, values(prv, rank, 6, n=big)), "large message")
    # From any rank: rank 0 takes one message from every other rank, in whatever order.
    if rank == 0:
        seen = set()
        for _ in range(size - 1):
            t = torch.zeros(5)
            sender = dist.recv(t, tag=9)
            expect(torch.equal(t, values(sender, 0, 9)), "any source from %d" % sender)
            seen.add(sender)
        expect(seen == set(range(1, size)), "senders %s" % seen)
    else:
        dist.send(values(rank, 0, 9), 0, tag=9)
    # batch_isend_irecv around the ring, both directions.
    outs = [torch.zeros(5), torch.zeros(5)]
    ops = [dist.P2POp(dist.isend, values(rank, nxt, 11), nxt, tag=11),
           dist.P2POp(dist.isend, values(rank, prv, 11), prv, tag=12),
           dist.P2POp(dist.irecv, outs[0], prv, tag=11),
           dist.P2POp(dist.irecv, outs[1], nxt, tag=12)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    expect(torch.equal(outs[0], values(prv, rank, 11)), "batch from previous")
    expect(torch.equal(outs[1], values(nxt, rank, 11)), "batch from next")
    # Futures of point-to-point works.
    if rank == 0:
        fut = dist.isend(values(0, 1, 13), 1, tag=13).get_future()
        fut.wait()
    elif rank == 1:
        t = torch.zeros(5)
        fut = dist.irecv(t, 0, tag=13).get_future()
        expect(torch.equal(fut.wait()[0], values(0, 1, 13)), "recv future")
    dist.barrier()
    print("P2P OK")


def alltoall(rank, size):
    # Even splits: rank r's row block j goes to rank j.
    src = torch.arange(size * 3, dtype=torch.float32) + 100 * rank
    out = torch.zeros(size * 3)
    dist.all_to_all_single(out, src)
    want = torch.cat([torch.arange(rank * 3, rank * 3 + 3, dtype=torch.float32) + 100 * r
                      for r in range(size)])
    expect(torch.equal(out, want), "even all_to_all_single %s" % out)
    # Uneven splits, some empty: rank r sends (r + j) % 3 rows of 2 columns to rank j.
    def rows(r, j):
        return (r + j) % 3

    in_splits = [rows(rank, j) for j in range(size)]
    out_splits = [rows(r, rank) for r in range(size)]
    src = torch.cat([torch.full((rows(rank, j), 2), rank * 10 + j, dtype=torch.int64)
                     for j in range(size)])
    out = torch.zeros(sum(out_splits), 2, dtype=torch.int64)
    work = dist.all_to_all_single(out, src, out_splits, in_splits, async_op=True)
    work.get_future().wait()
    want = torch.cat([torch.full((rows(r, rank), 2), r * 10 + rank, dtype=torch.int64)
                      for r in range(size)])
    expect(torch.equal(out, want), "uneven all_to_all_single %s" % out)
    # all_to_all with a different size per pair, bool tensors.
    ins = [torch.tensor([(rank + j + k) % 2 == 0 for k in range(rank + j + 1)])
           for j in range(size)]
    outs = [torch.zeros(r + rank + 1, dtype=torch.bool) for r in range(size)]
    dist.all_to_all(outs, ins)
    for r in range(size):
        want = torch.tensor([(r + rank + k) % 2 == 0 for k in range(r + rank + 1)])
        expect(torch.equal(outs[r], want), "all_to_all from %d" % r)
    # gather and scatter to and from every root.
    for root in range(size):
        gathered = [torch.zeros(2, 2) for _ in range(size)] if rank == root else None
        dist.gather(torch.full((2, 2), float(rank + root)), gathered, dst=root)
        if rank == root:
            expect(all(torch.equal(g, torch.full((2, 2), float(r + root)))
                       for r, g in enumerate(gathered)), "gather to %d" % root)
        piece = torch.zeros(3, dtype=torch.float64)
        pieces = ([torch.full((3,), float(r * 7 + root), dtype=torch.float64) for r in range(size)]
                  if rank == root else None)
        dist.scatter(piece, pieces, src=root)
        expect(torch.equal(piece, torch.full((3,), float(rank * 7 + root), dtype=torch.float64)),
               "scatter from %d" % root)
    dist.barrier()
    print("ALLTOALL OK")


def monitored(rank, size):
    libreduce.torch.monitored_barrier(timeout=datetime.timedelta(seconds=TIMEOUT_S))
    last = size - 1
    if rank == last:
        print("STAYED AWAY")
        sys.stdout.flush()
        time.sleep(2 * 2)  # through both barriers below, then leave
        return
    short = datetime.timedelta(seconds=2)
    if rank != 0:
        for _ in range(2):
            try:
                libreduce.torch.monitored_barrier(timeout=short)
            except RuntimeError:
                pass  # rank 0 did not release it
        return
    for wait_all in (False, True):
        start = time.monotonic()
        try:
            libreduce.torch.monitored_barrier(timeout=short, wait_all_ranks=wait_all)
        except RuntimeError as e:
            expect("Rank %d failed to pass monitoredBarrier" % last in str(e), str(e))
            expect(time.monotonic() - start < 6, "took %.1f s" % (time.monotonic() - start))
            continue
        raise AssertionError("monitored_barrier passed without rank %d" % last)
    print("MONITORED OK")


KEPT = []


def hooks(rank, size):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

    gloo = dist.new_group(backend="gloo")
    # Held to the end: gloo's group joins its own threads when it goes, so its last reference
    # must not be dropped on one of them (a hook's future callback may hold it).
    KEPT.append(gloo)

    def train(group, hook, make_state):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                    torch.nn.Linear(64, 8))
        ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
        ddp.register_comm_hook(make_state(group), hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        data = torch.Generator().manual_seed(100 + rank)
        for _ in range(6):
            x, y = torch.randn(16, 32, generator=data), torch.randn(16, 8, generator=data)
            opt.zero_grad()
            ((ddp(x) - y) ** 2).mean().backward()
            opt.step()
        return torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    def power_sgd(group):
        return powerSGD_hook.PowerSGDState(process_group=group, matrix_approximation_rank=2,
                                           start_powerSGD_iter=2, random_seed=0)

    def bf16_hook(state, bucket):
        # DDP refuses bf16_compress_hook by name without CUDA 11 and NCCL; the hook itself is
        # plain torch.distributed.
        return default_hooks.bf16_compress_hook(state, bucket)

    # hook, its state, gloo's hook, tolerance (gloo and the reducers sum in different orders;
    # gloo cannot sum bfloat16, so the bf16 hook is held against uncompressed gradients).
    cases = {
        "allreduce": (default_hooks.allreduce_hook, lambda g: g, None, 1e-5),
        "fp16": (default_hooks.fp16_compress_hook, lambda g: g, None, 2e-3),
        "bf16": (bf16_hook, lambda g: g, default_hooks.allreduce_hook, 2e-2),
        "powersgd": (powerSGD_hook.powerSGD_hook, power_sgd, None, 1e-4),
    }
    for name, (hook, make_state, gloo_hook, tolerance) in cases.items():
        ours = train(dist.group.WORLD, hook, make_state)
        theirs = train(gloo, gloo_hook or hook, make_state)
        diff = (ours - theirs).abs().max().item()
        expect(diff <= tolerance, "%s: parameters differ from gloo's by %g" % (name, diff))
        print("%s: max difference from gloo %g" % (name, diff))
    print("HOOKS OK")


def dead_peer(rank, size):
    dist.barrier()
    last = size - 1
    if rank == last:
        os._exit(0)  # dies without leaving the group
    start = time.monotonic()
    try:
        dist.recv(torch.zeros(4), last, tag=1)
    except RuntimeError as e:
        print("RAISED after %.1f s: %s" % (time.monotonic() - start, e))
        sys.stdout.flush()
        os._exit(0)
    print("NO ERROR")
    os._exit(1)


def main():
    dist.init_process_group("libreduce", timeout=datetime.timedelta(seconds=TIMEOUT_S))
    rank, size = dist.get_rank(), dist.get_world_size()
    {"p2p": p2p, "alltoall": alltoall, "monitored": monitored, "hooks": hooks,
     "dead_peer": dead_peer}[SCENARIO](rank, size)
    if SCENARIO != "monitored":
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
