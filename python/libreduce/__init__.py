# SPDX-License-Identifier: BSD-3-Clause
"""libreduce: reduction-server all-reduce for distributed training.

Collectives on numpy arrays and any buffer-protocol object::

    import libreduce
    comm = libreduce.Communicator.from_env()        # under reducectl or torchrun
    comm.all_reduce(grads)                          # in place, sum over every rank
    req = comm.all_reduce(grads, op="avg", async_op=True)
    req.wait(timeout=10.0)

PyTorch: ``import libreduce.torch`` registers the c10d backend ``"libreduce"``.
"""

from libreduce import _core
from libreduce.comm import Communicator, Request, unique_id, strip_secret
from libreduce.errors import (AbortedError, AuthError, ConnectionError, CudaError,
                              InternalError, InvalidArgumentError, InvalidUsageError,
                              LibreduceError, OutOfMemoryError, ProtocolError, RemoteError,
                              SystemCallError, TimeoutError, UnsupportedError)

__version__ = _core.version()
algorithms = _core.algorithms  # the names Communicator(algorithm=...) takes

__all__ = [
    "Communicator", "Request", "unique_id", "strip_secret", "algorithms", "LibreduceError",
    "InvalidArgumentError", "InvalidUsageError", "UnsupportedError", "SystemCallError",
    "OutOfMemoryError", "InternalError", "TimeoutError", "RemoteError", "ConnectionError",
    "AuthError", "AbortedError", "ProtocolError", "CudaError",
]
