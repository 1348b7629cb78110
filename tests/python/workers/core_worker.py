# SPDX-License-Identifier: BSD-3-Clause
"""One rank of the core-binding tests: libreduce.Communicator.from_env() on numpy arrays.

  core_worker.py SCENARIO
collectives  every collective, sync and async, several dtypes, and point-to-point messages;
             prints "CORE OK".
compressed   float32 all-reduce with LIBREDUCE_WIRE_DTYPE=bf16 and LIBREDUCE_DETERMINISTIC=1 in
             the environment: the bits of the float32 sum (rank order) of the inputs rounded to
             bfloat16, rounded once; prints "COMPRESSED OK".
join         only joins, then closes; prints "JOINED" (or the exception's class and message).
sums N K     K float32 all-reduces of N elements, each checked; prints "SUMS OK" (a known amount
             of traffic: the metrics tests count it).
sums N K F   the same, then stays (its metrics endpoint up) until file F exists, at most 120 s.
"""

import os
import sys
import time

import numpy as np

import libreduce


def collectives(comm):
    rank, size = comm.rank, comm.size
    for dtype in (np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8, np.int8):
        a = (np.arange(10) + rank).astype(dtype)
        comm.all_reduce(a)
        assert np.array_equal(a, (np.arange(10) * size + size * (size - 1) // 2).astype(dtype)), a
    # Out of place, another op, asynchronous with a bounded wait.
    src = np.full(1000, rank + 1, dtype=np.float32)
    dst = np.zeros_like(src)
    req = comm.all_reduce(src, "max", out=dst, async_op=True)
    assert req.wait(timeout=30) and req.test()
    assert req.result is dst and np.all(dst == size) and np.all(src == rank + 1)
    # bfloat16 carried in uint16 (1.0 = 0x3f80).
    bf = np.full(8, 0x3F80, dtype=np.uint16)
    comm.all_reduce(bf, dtype="bfloat16")
    assert np.all(bf == {1: 0x3F80, 2: 0x4000, 3: 0x4040, 4: 0x4080}[size]), bf
    # reduce_scatter / all_gather allocate their output when none is given.
    part = comm.reduce_scatter(np.arange(size * 4, dtype=np.int64))
    assert np.array_equal(part, size * np.arange(rank * 4, rank * 4 + 4)), part
    gathered = comm.all_gather(np.full(3, rank, dtype=np.int32))
    assert np.array_equal(gathered, np.repeat(np.arange(size), 3)), gathered
    # Broadcast of a bytearray (any buffer-protocol object).
    buf = bytearray(b"root" if rank == size - 1 else b"\0\0\0\0")
    comm.broadcast(buf, root=size - 1)
    assert bytes(buf) == b"root"
    # Point-to-point: around the ring, then every rank to rank 0 from any source.
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    if size > 1:
        sent = np.arange(6, dtype=np.float64) + 10 * rank
        got = np.zeros(6)
        req = comm.recv(got, prv, tag=2, async_op=True)
        comm.send(sent, nxt, tag=2)
        assert req.wait(timeout=30) and req.source == prv
        assert np.array_equal(got, np.arange(6) + 10 * prv), got
        if rank == 0:
            senders = set()
            for _ in range(size - 1):
                one = np.zeros(1, dtype=np.int32)
                sender = comm.recv(one, tag=3)
                assert one[0] == 100 + sender, (one, sender)
                senders.add(sender)
            assert senders == set(range(1, size)), senders
        else:
            comm.send(np.array([100 + rank], dtype=np.int32), 0, tag=3)
    comm.barrier()
    assert comm.async_error() is None
    print("CORE OK")


def round_bf16(x):
    """float32 -> bfloat16 -> float32, round to nearest even (finite values)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32)


def compressed(comm):
    rank, size = comm.rank, comm.size
    inputs = [np.random.default_rng(100 + r).normal(0, 3, 100003).astype(np.float32)
              for r in range(size)]
    want = round_bf16(inputs[0])
    for r in range(1, size):
        want = (want + round_bf16(inputs[r])).astype(np.float32)
    want = round_bf16(want)
    got = inputs[rank].copy()
    comm.all_reduce(got)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), \
        "%d of %d elements differ" % (np.count_nonzero(got != want), got.size)
    print("COMPRESSED OK")


def sums(comm, count, iters):
    rank, size = comm.rank, comm.size
    for i in range(iters):
        a = np.full(count, rank + i, dtype=np.float32)
        comm.all_reduce(a)
        assert np.all(a == size * i + size * (size - 1) // 2), a[:4]
    print("SUMS OK")


def stay_until(path):
    deadline = time.monotonic() + 120
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)


def main():
    try:
        comm = libreduce.Communicator.from_env()
    except libreduce.LibreduceError as e:
        print("%s: %s" % (type(e).__name__, e))
        return
    with comm:
        if sys.argv[1] == "collectives":
            collectives(comm)
        elif sys.argv[1] == "compressed":
            compressed(comm)
        elif sys.argv[1] == "sums":
            sums(comm, int(sys.argv[2]), int(sys.argv[3]))
            if len(sys.argv) > 4:
                sys.stdout.flush()
                stay_until(sys.argv[4])
        else:
            print("JOINED")


if __name__ == "__main__":
    main()
