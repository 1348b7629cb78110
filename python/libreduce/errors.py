# SPDX-License-Identifier: BSD-3-Clause
"""Exceptions raised by libreduce: one class per status code of the C API.

Every class derives from :class:`LibreduceError` and, where one fits, from the built-in
exception of the same meaning, so ``except TimeoutError`` or ``except ValueError`` work too.
The message is the library's detailed one (it names the reducer, rank or argument at fault).
"""

import builtins


class LibreduceError(Exception):
    """A libreduce call failed. ``status`` is the C status code, ``status_name`` its name."""

    status = -6
    status_name = "internal error"

    def __init__(self, message):
        super().__init__(message)


class InvalidArgumentError(LibreduceError, ValueError):
    """An argument is wrong: a null or closed object, a bad size, dtype or operator."""

    status, status_name = -1, "invalid argument"


class InvalidUsageError(LibreduceError):
    """The call is not allowed now (for example on a closed communicator)."""

    status, status_name = -2, "invalid usage"


class UnsupportedError(LibreduceError):
    """A valid request this build or machine cannot serve (a dtype/op without a kernel)."""

    status, status_name = -3, "unsupported"


class SystemCallError(LibreduceError, OSError):
    """An operating-system call failed."""

    status, status_name = -4, "system error"


class OutOfMemoryError(LibreduceError, MemoryError):
    """An allocation failed or a configured memory limit was hit."""

    status, status_name = -5, "out of memory"


class InternalError(LibreduceError):
    """An invariant of libreduce itself was broken (a bug: please report it)."""


class TimeoutError(LibreduceError, builtins.TimeoutError):  # noqa: A001 (shadows on purpose)
    """A peer (rank or reducer) stayed silent longer than the communicator's timeout."""

    status, status_name = -7, "timeout"


class RemoteError(LibreduceError):
    """A peer failed or reported an error."""

    status, status_name = -8, "remote peer error"


class ConnectionError(LibreduceError, builtins.ConnectionError):  # noqa: A001
    """A connection could not be made or was lost."""

    status, status_name = -9, "connection error"


class AuthError(LibreduceError, PermissionError):
    """A reducer refused the job secret."""

    status, status_name = -10, "authentication failed"


class AbortedError(LibreduceError):
    """The communicator was aborted; create a new one."""

    status, status_name = -11, "communicator aborted"


class ProtocolError(LibreduceError):
    """A malformed or unexpected message arrived from the network."""

    status, status_name = -12, "protocol error"


class CudaError(LibreduceError):
    """A CUDA runtime call failed."""

    status, status_name = -13, "CUDA error"


_BY_STATUS = {
    cls.status: cls
    for cls in (InvalidArgumentError, InvalidUsageError, UnsupportedError, SystemCallError,
                OutOfMemoryError, InternalError, TimeoutError, RemoteError, ConnectionError,
                AuthError, AbortedError, ProtocolError, CudaError)
}


def error_for_status(status, message):
    """The exception for a C status code and message (used by the bindings)."""
    cls = _BY_STATUS.get(status)
    if cls is None:
        exc = LibreduceError(message)
        exc.status = status
        exc.status_name = "status %d" % status
        return exc
    return cls(message)
