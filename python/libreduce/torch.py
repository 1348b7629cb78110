"""The torch.distributed backend "libreduce".

Importing this module registers the backend::

    import torch.distributed as dist
    import libreduce.torch  # noqa: F401
    dist.init_process_group("libreduce")          # under reducectl or torchrun

Every rank joins one libreduce communicator: through the reducers in LIBREDUCE_REDUCERS
(as reducectl sets them), or a ring among the ranks when there are none. Rank 0 creates the
communicator id and passes it through the store torch gives the backend, without the job
secret: each rank reads the secret from its own LIBREDUCE_SECRET_FILE. The group's timeout
bounds every wait for a peer, so a dead rank or reducer makes wait() raise within it.

Options of the groups created from then on (torch passes custom backends no options of their
own)::

    libreduce.torch.set_options(wire_dtype="bf16")  # float32 gradients travel as bfloat16

Fields left None take their LIBREDUCE_* setting (LIBREDUCE_WIRE_DTYPE, which a job spec's
``libreduce:`` section sets for every rank).

Point-to-point (send / recv / isend / irecv, any source, batch_isend_irecv), all_to_all and
all_to_all_single (uneven splits), gather and scatter (one message per rank), and every
collective work's get_future() (so DDP communication hooks work) are supported;
torch.distributed.monitored_barrier refuses non-gloo groups by name, so use
``libreduce.torch.monitored_barrier``.
"""

import datetime

import torch.distributed as dist

from libreduce import _core

try:
    from libreduce._torch import TORCH_VERSION_MAJOR, ProcessGroupLibreduce
except ImportError as e:  # the package was built without torch, or for another torch
    raise ImportError("libreduce.torch: the PyTorch backend is not usable in this build (%s); "
                      "build with python3-torch and libtorch-dev installed "
                      "(LIBREDUCE_WITH_TORCH)" % e) from e

BACKEND_NAME = "libreduce"
_ID_KEY = "libreduce/unique_id"
_WIRE_DTYPES = ("none", "bf16", "fp16")
_options = {"wire_dtype": None}


def set_options(*, wire_dtype=None):
    """Options of the process groups created after this call (None: the setting).

    ``wire_dtype``: "none", "bf16" or "fp16": float32 all-reduce, reduce-scatter
    (sum, avg) and all-gather travel to the reducers rounded to that type and are summed in
    float32 there.
    """
    if wire_dtype is not None and wire_dtype not in _WIRE_DTYPES:
        raise ValueError("wire_dtype must be one of %s, not %r" % (", ".join(_WIRE_DTYPES),
                                                                   wire_dtype))
    _options["wire_dtype"] = wire_dtype


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """torch.distributed.monitored_barrier for libreduce groups (torch's own refuses every
    backend but gloo by name): every rank reports to rank 0, which waits for each up to
    ``timeout`` (default: the group's) and raises naming the ranks that did not come (every
    one of them with ``wait_all_ranks``); the others raise when rank 0 does not release them.
    """
    from torch.distributed import distributed_c10d as c10d
    pg = group if group is not None else c10d._get_default_group()
    if timeout is None:
        timeout = c10d.default_pg_timeout
    return pg.monitored_barrier(timeout, wait_all_ranks=wait_all_ranks)


def _create(store, rank, size, timeout):
    """The creator torch calls with the group's (prefix) store, rank, size and timeout."""
    if isinstance(timeout, (int, float)):
        timeout = datetime.timedelta(seconds=timeout)
    if rank == 0:
        store.set(_ID_KEY, _core.strip_secret(_core.unique_id()))
    unique_id = store.get(_ID_KEY)  # blocks until rank 0 has set it (store timeout)
    return ProcessGroupLibreduce(unique_id, rank, size, timeout,
                                 wire_dtype=_options["wire_dtype"] or "")


def _register():
    if BACKEND_NAME.upper() in getattr(dist.Backend, "_plugins", {}):
        return  # imported twice
    if TORCH_VERSION_MAJOR >= 2:
        # torch 2 routes by device; CUDA tensors are staged through host memory.
        dist.Backend.register_backend(BACKEND_NAME, _create, devices=["cpu", "cuda"])
    else:
        dist.Backend.register_backend(BACKEND_NAME, _create)


_register()

__all__ = ["BACKEND_NAME", "ProcessGroupLibreduce", "monitored_barrier", "set_options"]
