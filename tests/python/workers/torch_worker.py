# SPDX-License-Identifier: BSD-3-Clause
"""One rank of the c10d backend tests: torch.distributed with init_process_group("libreduce").

  torch_worker.py SCENARIO [TIMEOUT_S]
collectives  every collective torch.distributed offers that the backend implements, on every
             dtype and op, checked against values computed locally; prints "COLLECTIVES OK".
dead_rank    the last rank exits abruptly after one all-reduce; the others' next all-reduce
             must raise from wait() within the group's timeout; prints "RAISED after S s: ...".
bad_input    argument errors raise at the call and leave the group usable; prints "BAD INPUT OK".
compressed   libreduce.torch.set_options(wire_dtype="bf16") before the group, deterministic
             reducers: a float32 all-reduce gives the bits of the float32 sum (rank order) of the
             inputs rounded to bfloat16, rounded once; prints "COMPRESSED OK".
"""

import datetime
import warnings
import os
import sys
import time

import torch
import torch.distributed as dist

import libreduce.torch  # noqa: F401

SCENARIO = sys.argv[1]
warnings.filterwarnings("ignore", message=".*all_reduce_coalesced")
TIMEOUT_S = float(sys.argv[2]) if len(sys.argv) > 2 else 60


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def collectives(rank, size):
    ranks = torch.arange(size, dtype=torch.float64)
    # all_reduce: every dtype torch sends, every op (values chosen to be exact in each dtype).
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
                  torch.int64, torch.int8, torch.uint8):
        base = torch.arange(1, 7, dtype=torch.float64)
        mine = (base + rank).to(dtype)
        everyone = [(base + r) for r in range(size)]
        cases = {
            dist.ReduceOp.SUM: sum(everyone),
            dist.ReduceOp.PRODUCT: torch.stack(everyone).prod(0),
            dist.ReduceOp.MIN: torch.stack(everyone).min(0).values,
            dist.ReduceOp.MAX: torch.stack(everyone).max(0).values,
        }
        if dtype.is_floating_point:
            cases[dist.ReduceOp.AVG] = sum(everyone) / size
        for op, want in cases.items():
            t = mine.clone()
            work = dist.all_reduce(t, op=op, async_op=True)
            expect(work.wait(), "wait")
            got = work.get_future().value()[0]
            expect(torch.equal(t, want.to(dtype)), "all_reduce %s %s: %s != %s" % (dtype, op, t, want))
            expect(got.data_ptr() == t.data_ptr(), "future holds the tensor")
    # bool: SUM is any, PRODUCT all.
    flags = torch.tensor([rank == 0, True, False])
    t = flags.clone()
    dist.all_reduce(t)
    expect(t.tolist() == [True, True, False], "bool any")
    t = flags.clone()
    dist.all_reduce(t, op=dist.ReduceOp.PRODUCT)
    expect(t.tolist() == [size == 1, True, False], "bool all")
    # complex, and a non-contiguous view.
    z = torch.tensor([1 + 2j, rank * 1j], dtype=torch.complex64)
    dist.all_reduce(z)
    expect(torch.equal(z, torch.tensor([size * (1 + 2j), ranks.sum().item() * 1j],
                                       dtype=torch.complex64)), "complex")
    m = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()  # not contiguous
    dist.all_reduce(m)
    expect(torch.equal(m, size * torch.arange(12, dtype=torch.float32).reshape(3, 4).t()), "view")
    # coalesced (one request for a list).
    parts = [torch.full((3,), float(rank)), torch.full((2, 2), 1.0)]
    dist.all_reduce_coalesced(parts)
    expect(torch.equal(parts[0], torch.full((3,), ranks.sum().item())), "coalesced 0")
    expect(torch.equal(parts[1], torch.full((2, 2), float(size))), "coalesced 1")
    # broadcast from every root, including an int16 tensor (moved as bytes).
    for root in range(size):
        b = torch.full((5,), rank * 10, dtype=torch.int16)
        dist.broadcast(b, src=root)
        expect(torch.equal(b, torch.full((5,), root * 10, dtype=torch.int16)), "broadcast")
    # all_gather / _allgather_base.
    outs = [torch.zeros(2, 3) for _ in range(size)]
    dist.all_gather(outs, torch.full((2, 3), float(rank)))
    expect(all(torch.equal(o, torch.full((2, 3), float(r))) for r, o in enumerate(outs)), "all_gather")
    flat = torch.zeros(size * 4, dtype=torch.int64)
    dist.all_gather_into_tensor(flat, torch.full((4,), rank, dtype=torch.int64))
    expect(torch.equal(flat, torch.arange(size).repeat_interleave(4)), "all_gather_into_tensor")
    # reduce_scatter / _reduce_scatter_base.
    out = torch.zeros(3)
    dist.reduce_scatter(out, [torch.full((3,), float(rank + r)) for r in range(size)])
    expect(torch.equal(out, torch.full((3,), float(ranks.sum().item() + size * rank))), "reduce_scatter")
    out = torch.zeros(2, dtype=torch.float64)
    dist.reduce_scatter_tensor(out, torch.arange(2 * size, dtype=torch.float64) + rank,
                              op=dist.ReduceOp.MAX)
    expect(torch.equal(out, torch.arange(2 * rank, 2 * rank + 2, dtype=torch.float64) + size - 1),
           "reduce_scatter_tensor")
    # reduce, gather, scatter (root 0 and the last rank).
    for root in (0, size - 1):
        t = torch.full((2,), float(rank + 1))
        dist.reduce(t, dst=root)
        want = float(size * (size + 1) // 2) if rank == root else float(rank + 1)
        expect(torch.equal(t, torch.full((2,), want)), "reduce")
        gathered = [torch.zeros(2) for _ in range(size)] if rank == root else None
        dist.gather(torch.full((2,), float(rank)), gathered, dst=root)
        if rank == root:
            expect(all(torch.equal(g, torch.full((2,), float(r))) for r, g in enumerate(gathered)),
                   "gather")
        piece = torch.zeros(2)
        pieces = [torch.full((2,), float(r * 7)) for r in range(size)] if rank == root else None
        dist.scatter(piece, pieces, src=root)
        expect(torch.equal(piece, torch.full((2,), float(rank * 7))), "scatter")
    # object collectives (pickles over broadcast / all_gather).
    objs = [None] * size
    dist.all_gather_object(objs, {"rank": rank})
    expect(objs == [{"rank": r} for r in range(size)], "all_gather_object")
    dist.barrier()
    print("COLLECTIVES OK")


def dead_rank(rank, size):
    t = torch.ones(4)
    dist.all_reduce(t)
    if rank == size - 1:
        os._exit(0)  # dies without leaving the group
    time.sleep(0.5)
    start = time.monotonic()
    try:
        dist.all_reduce(torch.ones(1 << 16), async_op=True).wait()
    except RuntimeError as e:
        print("RAISED after %.1f s: %s" % (time.monotonic() - start, e))
        sys.stdout.flush()
        os._exit(0)  # the group cannot be left cleanly with a dead member
    print("NO ERROR")
    os._exit(1)


def bad_input(rank, size):
    def raises(kind, fn, text):
        try:
            fn()
        except kind as e:
            expect(text in str(e), "message %r lacks %r" % (str(e), text))
            return
        raise AssertionError("no %s for %s" % (kind.__name__, text))

    raises(TypeError, lambda: dist.all_reduce(torch.ones(2, dtype=torch.int16)), "cannot reduce")
    raises(RuntimeError, lambda: dist.all_reduce(torch.ones(2, dtype=torch.int32),
                                                 op=dist.ReduceOp.BAND), "bitwise")
    raises(ValueError, lambda: dist.all_gather([torch.zeros(2)] * (size + 1), torch.zeros(2)),
           "one per rank")
    raises(ValueError, lambda: dist.all_gather([torch.zeros(3)] * size, torch.zeros(2)),
           "elements")
    raises(ValueError, lambda: dist.broadcast(torch.zeros(2), src=size), "")
    t = torch.full((3,), float(rank))
    dist.all_reduce(t)  # still usable
    expect(torch.equal(t, torch.full((3,), float(size * (size - 1) // 2))), "after errors")
    print("BAD INPUT OK")


def round_bf16(t):
    return t.to(torch.bfloat16).to(torch.float32)  # torch rounds to nearest even


def compressed(rank, size):
    inputs = [torch.randn(100003, generator=torch.Generator().manual_seed(7 + r)) * 3
              for r in range(size)]
    want = round_bf16(inputs[0])
    for r in range(1, size):
        want = want + round_bf16(inputs[r])
    want = round_bf16(want)
    got = inputs[rank].clone()
    dist.all_reduce(got)
    expect(torch.equal(got, want), "%d elements differ" % int((got != want).sum()))
    print("COMPRESSED OK")


def main():
    if SCENARIO == "compressed":
        libreduce.torch.set_options(wire_dtype="bf16")
    dist.init_process_group("libreduce", timeout=datetime.timedelta(seconds=TIMEOUT_S))
    expect(dist.get_backend() == "libreduce", "backend name")
    rank, size = dist.get_rank(), dist.get_world_size()
    {"collectives": collectives, "dead_rank": dead_rank, "bad_input": bad_input,
     "compressed": compressed}[SCENARIO](rank, size)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
