# SPDX-License-Identifier: BSD-3-Clause
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

Options of a group::

    dist.init_process_group("libreduce", pg_options=libreduce.torch.Options(wire_dtype="bf16"))
    libreduce.torch.set_options(wire_dtype="bf16")  # the default for groups without pg_options

Fields left unset take their LIBREDUCE_* setting (LIBREDUCE_WIRE_DTYPE, which a job spec's
``libreduce:`` section sets for every rank).

Point-to-point (send / recv / isend / irecv, any source, batch_isend_irecv), all_to_all and
all_to_all_single (uneven splits), gather and scatter (one message per rank), and every
collective work's get_future() (so DDP communication hooks work) are supported, and so are
new_group / split_group (a new communicator of the members), abort and shutdown.
"""

import datetime

import torch.distributed as dist

try:
    from libreduce._torch import TORCH_VERSION, ProcessGroupLibreduce
except ImportError as e:  # the package was built without torch, or for another torch
    import torch
    raise ImportError(
        "libreduce.torch: the PyTorch backend is not usable here (%s). It is built for the "
        "torch installed when libreduce was built; this is torch %s: reinstall libreduce in "
        "this environment (pip install .) or rebuild with LIBREDUCE_PYTHON pointing at this "
        "interpreter" % (e, torch.__version__)) from e

BACKEND_NAME = "libreduce"
Options = ProcessGroupLibreduce.Options
_WIRE_DTYPES = ("none", "bf16", "fp16")
_options = {"wire_dtype": None}


def set_options(*, wire_dtype=None):
    """Defaults for the process groups created after this call that get no ``pg_options`` of
    their own (None: the LIBREDUCE_* setting).

    ``wire_dtype``: "none", "bf16" or "fp16": float32 all-reduce, reduce-scatter
    (sum, avg) and all-gather travel to the reducers rounded to that type and are summed in
    float32 there.
    """
    if wire_dtype is not None and wire_dtype not in _WIRE_DTYPES:
        raise ValueError("wire_dtype must be one of %s, not %r" % (", ".join(_WIRE_DTYPES),
                                                                   wire_dtype))
    _options["wire_dtype"] = wire_dtype


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A monitored barrier on a libreduce group: every rank reports to rank 0, which waits for
    each up to ``timeout`` (default: the group's) and raises naming the ranks that did not
    come (every one of them with ``wait_all_ranks``); the others raise when rank 0 does not
    release them. ``torch.distributed.monitored_barrier`` reaches the same code.
    """
    from torch.distributed import distributed_c10d as c10d
    pg = group if group is not None else c10d._get_default_group()
    if timeout is None:
        timeout = c10d.default_pg_timeout
    return pg.monitored_barrier(timeout, wait_all_ranks=wait_all_ranks)


def _options_for(timeout, backend_options, group_name="", global_ranks=()):
    """The group's Options: the caller's pg_options when they are libreduce's, else defaults
    from set_options(); torch's timeout, group name and ranks in either case."""
    if backend_options is not None and not isinstance(backend_options, Options):
        raise TypeError("libreduce: pg_options must be libreduce.torch.Options, not %s"
                        % type(backend_options).__name__)
    options = backend_options if backend_options is not None else Options()
    if backend_options is None and _options["wire_dtype"] is not None:
        options.wire_dtype = _options["wire_dtype"]
    if options.wire_dtype not in ("",) + _WIRE_DTYPES:
        raise ValueError("wire_dtype must be one of %s, not %r" % (", ".join(_WIRE_DTYPES),
                                                                   options.wire_dtype))
    if isinstance(timeout, (int, float)):
        timeout = datetime.timedelta(seconds=timeout)
    options._timeout = timeout
    options.group_name = str(group_name)
    options.global_ranks_in_group = list(global_ranks)
    return options


def _create(dist_options, backend_options):
    """The creator torch calls (extended API): the group's store, rank, size, timeout, name
    and global ranks in ``dist_options``; ``pg_options`` from init_process_group / new_group
    in ``backend_options``."""
    options = _options_for(dist_options.timeout, backend_options, dist_options.group_id,
                           dist_options.global_ranks_in_group)
    return ProcessGroupLibreduce(dist_options.store, dist_options.group_rank,
                                 dist_options.group_size, options)


def _register():
    if BACKEND_NAME.upper() in getattr(dist.Backend, "_plugins", {}):
        return  # imported twice
    # CUDA tensors are staged through host memory.
    dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True,
                                  devices=["cpu", "cuda"])


_register()

__all__ = ["BACKEND_NAME", "Options", "ProcessGroupLibreduce", "monitored_barrier",
           "set_options"]
