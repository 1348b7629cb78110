# SPDX-License-Identifier: BSD-3-Clause
"""Communicators on numpy arrays and buffer-protocol objects (over libreduce._core)."""

from libreduce import _core

OPS = ("sum", "avg", "prod", "min", "max")


def unique_id(reducers=None, secret=None):
    """A fresh communicator id (bytes) to give every rank, NCCL style.

    Without arguments the reducers and secret come from LIBREDUCE_REDUCERS and
    LIBREDUCE_SECRET(_FILE); with no reducers, this process serves the ring rendezvous and
    the communicator uses ring all-reduce.
    """
    return _core.unique_id(reducers, secret)


def strip_secret(uid):
    """The id without its secret, safe to pass through a store others can read. Each rank then
    needs the secret in its own LIBREDUCE_SECRET_FILE (as reducectl sets it)."""
    return _core.strip_secret(uid)


class Request:
    """An asynchronous operation. ``result`` is its output buffer."""

    def __init__(self, request, result):
        self._request = request
        self.result = result

    def test(self):
        """True when the operation is done; raises its error if it failed."""
        return self._request.test()

    def wait(self, timeout=None):
        """Waits up to ``timeout`` seconds (None: until it ends, which the communicator's own
        timeout bounds). True when done, False when the wait ran out; raises on failure."""
        return self._request.wait(timeout)

    @property
    def source(self):
        """The rank a finished receive took its message from (-1 for other operations)."""
        return self._request.source


def _like(buf, count):
    import numpy as np  # only the allocating forms need numpy

    return np.empty(count, dtype=np.asarray(buf).dtype)


def _size_of(buf):
    return memoryview(buf).nbytes // memoryview(buf).itemsize


class Communicator:
    """A group of ranks reducing through the reducers (or a ring when there are none).

    Create it on every rank with the same ``unique_id`` (see :func:`unique_id`), or with
    :meth:`from_env` under reducectl / torchrun. Collectives must be called in the same order
    on every rank. ``timeout`` (seconds) bounds every wait for a peer: a dead rank or reducer
    makes the operation raise a :class:`~libreduce.errors.LibreduceError` naming it.
    ``dtype`` overrides the element type a buffer's format implies (for example "bfloat16"
    for a uint16 array). ``wire_dtype`` ("none", "bf16" or "fp16"; default
    LIBREDUCE_WIRE_DTYPE) sends float32 all-reduce, reduce-scatter (sum, avg) and
    all-gather to the reducers rounded to that type; the reducers sum in float32 and round once.
    """

    def __init__(self, rank, size, unique_id, *, timeout=None, algorithm=None, chunk_bytes=None,
                 window=None, deterministic=None, wire_dtype=None):
        self._comm = _core.Communicator(rank, size, unique_id, timeout=timeout,
                                        algorithm=algorithm, chunk_bytes=chunk_bytes,
                                        window=window, deterministic=deterministic,
                                        wire_dtype=wire_dtype)

    @classmethod
    def from_env(cls):
        """The communicator the launcher describes (LIBREDUCE_REDUCERS, LIBREDUCE_COMM_ID,
        RANK, WORLD_SIZE, the secret file)."""
        self = cls.__new__(cls)
        self._comm = _core.Communicator.from_env()
        return self

    @property
    def rank(self):
        return self._comm.rank

    @property
    def size(self):
        return self._comm.size

    def _run(self, post, result, async_op):
        request = post(async_op)
        return Request(request, result) if async_op else result

    def all_reduce(self, buf, op="sum", *, out=None, dtype=None, async_op=False):
        """Element-wise reduction of every rank's ``buf`` into ``out`` (default: ``buf``)."""
        out = buf if out is None else out
        return self._run(lambda a: self._comm.all_reduce(buf, out, op, dtype or "", a), out,
                         async_op)

    def reduce_scatter(self, buf, op="sum", *, out=None, dtype=None, async_op=False):
        """Rank r gets part r of the reduction of every rank's ``buf`` (size * len(out))."""
        out = _like(buf, _size_of(buf) // self.size) if out is None else out
        return self._run(lambda a: self._comm.reduce_scatter(buf, out, op, dtype or "", a), out,
                         async_op)

    def all_gather(self, buf, *, out=None, dtype=None, async_op=False):
        """Every rank's ``buf`` in rank order, in ``out`` (size * len(buf) elements)."""
        out = _like(buf, _size_of(buf) * self.size) if out is None else out
        return self._run(lambda a: self._comm.all_gather(buf, out, dtype or "", a), out,
                         async_op)

    def broadcast(self, buf, root=0, *, out=None, dtype=None, async_op=False):
        """``root``'s ``buf`` into every rank's ``out`` (default: ``buf``, in place)."""
        out = buf if out is None else out
        return self._run(lambda a: self._comm.broadcast(buf, out, root, dtype or "", a), out,
                         async_op)

    def send(self, buf, peer, *, tag=0, dtype=None, async_op=False):
        """Sends ``buf`` to rank ``peer`` under ``tag`` (>= 0). Not ordered with the
        collectives; messages to one rank under one tag arrive in the order sent."""
        return self._run(lambda a: self._comm.send(buf, peer, tag, dtype or "", a), None,
                         async_op)

    def recv(self, buf, peer=None, *, tag=0, dtype=None, async_op=False):
        """Receives into ``buf`` a message of exactly its size from rank ``peer`` (None: the
        first from any rank) under ``tag``; returns the sender's rank (``async_op``: a Request
        whose ``source`` is the sender once it is done)."""
        request = self._comm.recv(buf, peer, tag, dtype or "", async_op)
        return Request(request, buf) if async_op else request

    def barrier(self, *, async_op=False):
        """Returns once every rank has entered the barrier."""
        return self._run(lambda a: self._comm.barrier(a), None, async_op)

    def reducer_transports(self, reducer):
        """What carries this rank's traffic to reducer ``reducer`` (0-based, in the id's order):
        the UCX transports and devices of its connections, "TL/DEVICE" joined by "+"
        ("tcp/eth1"); "" until the first operation has gone through. InvalidArgumentError for a
        reducer the communicator does not have (a ring communicator has none)."""
        return self._comm.reducer_transports(reducer)

    def async_error(self):
        """None while healthy, else (status, message) of the error that failed it."""
        return self._comm.async_error()

    def abort(self):
        """Fails every pending operation at once and closes the connections."""
        self._comm.abort()

    def close(self):
        """Leaves the communicator; later calls raise InvalidUsageError."""
        self._comm.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
