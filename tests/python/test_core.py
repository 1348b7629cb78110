# SPDX-License-Identifier: BSD-3-Clause
"""The core bindings (libreduce._core through the libreduce package): argument checking and
typed errors in one process, then real collectives between worker processes, through real
reduce-server processes and through the ring."""

import array
import os
import re
import time

import numpy as np
import pytest

import libreduce
from conftest import assert_all_ok, free_port, run_ranks


@pytest.fixture
def solo():
    """A communicator of one rank (ring; its rendezvous lives in this process)."""
    with libreduce.Communicator(0, 1, libreduce.unique_id(reducers="", secret=""), timeout=5) as c:
        yield c


def test_version_and_error_classes():
    assert libreduce.__version__.count(".") == 2
    assert issubclass(libreduce.TimeoutError, TimeoutError)
    assert issubclass(libreduce.ConnectionError, ConnectionError)
    assert issubclass(libreduce.InvalidArgumentError, ValueError)
    assert issubclass(libreduce.AuthError, libreduce.LibreduceError)
    assert libreduce.errors.error_for_status(-7, "x").status_name == "timeout"


def test_error_classes_match_the_c_status_enum():
    # Every error code of rdResult_t in the public header has its class, with the C library's
    # name for it; none is left over.
    header = os.path.join(os.path.dirname(__file__), "../../include/libreduce/reduce.h")
    enum = re.search(r"typedef enum rdResult \{(.*?)\} rdResult_t;", open(header).read(), re.S)
    codes = {int(v): n for n, v in re.findall(r"(rd\w+) = (-?\d+)", enum.group(1))}
    errors = {c: n for c, n in codes.items() if c < 0}
    assert len(errors) >= 13
    by_status = libreduce.errors._BY_STATUS
    assert set(by_status) == set(errors), (set(by_status) ^ set(errors))
    for code, cls in by_status.items():
        assert cls.status == code
        assert cls.status_name == libreduce._core.status_name(code), (cls, errors[code])


def test_algorithm_names_come_from_the_library():
    assert libreduce.algorithms() == ["auto", "rs", "ring"]


def test_one_rank_collectives(solo):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert solo.all_reduce(a, "max") is a and a[1, 2] == 5
    assert np.array_equal(solo.all_gather(np.arange(3)), np.arange(3))
    assert solo.all_reduce(array.array("d", [1.5, 2.5]))[1] == 2.5  # array.array buffers too
    assert solo.rank == 0 and solo.size == 1


@pytest.mark.parametrize("call, error, text", [
    (lambda c: c.all_reduce(np.arange(12.0).reshape(3, 4)[:, ::2]),
     libreduce.InvalidArgumentError, "C-contiguous"),
    (lambda c: c.all_reduce(np.zeros(4, np.float32), out=bytes(16)),
     libreduce.InvalidArgumentError, "read-only"),
    (lambda c: c.all_reduce(np.zeros(4, np.float32), out=np.zeros(4, np.int32)),
     libreduce.InvalidArgumentError, "send holds float32 but recv holds int32"),
    (lambda c: c.all_reduce(np.zeros(4), out=np.zeros(5)),
     libreduce.InvalidArgumentError, "recv has 5 elements; expected 4"),
    (lambda c: c.all_reduce(np.zeros(4), "median"),
     libreduce.InvalidArgumentError, "unknown reduction op 'median'"),
    (lambda c: c.all_reduce(np.zeros(4, np.int16)), libreduce.UnsupportedError, "int16"),
    (lambda c: c.all_reduce(np.zeros(3, np.uint8), dtype="bfloat16"),
     libreduce.InvalidArgumentError, "not a whole number of bfloat16"),
    (lambda c: c.all_reduce(np.zeros(2), dtype="float8"), libreduce.InvalidArgumentError,
     "unknown dtype 'float8'"),
    (lambda c: c.all_reduce([1.0, 2.0]), libreduce.InvalidArgumentError, "buffer protocol"),
    (lambda c: c.broadcast(np.zeros(2), root=3), libreduce.InvalidArgumentError, "root 3"),
    (lambda c: c.reduce_scatter(np.zeros(4), out=np.zeros(3)), libreduce.InvalidArgumentError,
     "send has 4 elements; expected 3"),
])
def test_bad_arguments_raise_and_leave_the_communicator_usable(solo, call, error, text):
    with pytest.raises(error, match=text):
        call(solo)
    ok = np.ones(3)
    solo.all_reduce(ok)
    assert np.all(ok == 1)


def test_closed_communicator_and_bad_construction(solo):
    solo.close()
    with pytest.raises(libreduce.InvalidUsageError, match="closed"):
        solo.all_reduce(np.zeros(2))
    with pytest.raises(libreduce.InvalidArgumentError, match="not a libreduce unique id"):
        libreduce.Communicator(0, 1, b"garbage")
    with pytest.raises(libreduce.InvalidArgumentError, match="rank 2 of 2"):
        libreduce.Communicator(2, 2, libreduce.unique_id(reducers="127.0.0.1:1"))
    with pytest.raises(libreduce.InvalidArgumentError, match="expected auto, rs or ring"):
        libreduce.Communicator(0, 1, libreduce.unique_id(reducers=""), algorithm="tree")
    with pytest.raises(libreduce.InvalidArgumentError, match="no wire type 'fp8'"):
        libreduce.Communicator(0, 1, libreduce.unique_id(reducers=""), wire_dtype="fp8")


def test_strip_secret_keeps_the_secret_out_of_the_id(monkeypatch):
    uid = libreduce.unique_id(reducers="127.0.0.1:1", secret="topsecret")
    assert b"topsecret".hex().encode() in uid
    public = libreduce.strip_secret(uid)
    assert b"topsecret".hex().encode() not in public
    monkeypatch.delenv("LIBREDUCE_SECRET", raising=False)
    monkeypatch.delenv("LIBREDUCE_SECRET_FILE", raising=False)
    with pytest.raises(libreduce.InvalidArgumentError, match="LIBREDUCE_SECRET_FILE"):
        libreduce.Communicator(0, 1, public)


@pytest.mark.parametrize("ranks, reducer_count", [(2, 2), (3, 1), (2, 0)])
def test_collectives_between_processes(reducers, ranks, reducer_count):
    addresses = reducers.start(reducer_count) if reducer_count else None
    results = run_ranks("core_worker.py", ranks, ["collectives"], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=90)
    assert_all_ok(results)
    assert all("CORE OK" in out for _, out in results), results


def test_compressed_all_reduce_is_the_float32_sum_of_rounded_inputs(reducers):
    addresses = reducers.start(2)
    results = run_ranks("core_worker.py", 3, ["compressed"], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=90,
                        extra={"LIBREDUCE_WIRE_DTYPE": "bf16", "LIBREDUCE_DETERMINISTIC": "1"})
    assert_all_ok(results)
    assert all("COMPRESSED OK" in out for _, out in results), results


def test_reducer_transports_name_what_carries_each_link(reducers, solo):
    """A communicator of one rank in this process through a real reducer: once an operation
    went through, its link names the UCX transport and device it settled on (on this host's
    loopback); a reducer it does not have, and the ring's none, are errors."""
    addresses = reducers.start(1)
    with open(reducers.secret_file) as f:
        secret = f.read().strip()
    uid = libreduce.unique_id(reducers=addresses, secret=secret)
    with libreduce.Communicator(0, 1, uid, timeout=20) as c:
        a = np.arange(1 << 16, dtype=np.float32)
        assert np.array_equal(c.all_reduce(a.copy()), a)
        assert re.fullmatch(r"[\w-]+/[\w:.-]+(\+[\w-]+/[\w:.-]+)*( \(results: .+\))?",
                            c.reducer_transports(0)), c.reducer_transports(0)
        assert "lo" in c.reducer_transports(0)
        with pytest.raises(libreduce.InvalidArgumentError, match="reducer 1 of 1"):
            c.reducer_transports(1)
    with pytest.raises(libreduce.InvalidArgumentError, match="reducer 0 of 0"):
        solo.reducer_transports(0)


def test_wrong_secret_is_refused(reducers, tmp_path):
    addresses = reducers.start(1)
    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-secret\n")
    start = time.monotonic()
    results = run_ranks("core_worker.py", 2, ["join"], reducers=addresses, secret_file=wrong,
                        extra={"LIBREDUCE_TIMEOUT_MS": "5000"}, timeout=60)
    assert_all_ok(results)
    for _, out in results:
        assert out.startswith("AuthError: "), out
    assert time.monotonic() - start < 30


def test_missing_reducer_is_named(tmp_path):
    nobody = "127.0.0.1:%d" % free_port()
    start = time.monotonic()
    results = run_ranks("core_worker.py", 2, ["join"], reducers=nobody,
                        extra={"LIBREDUCE_TIMEOUT_MS": "3000"}, timeout=60)
    assert_all_ok(results)
    for _, out in results:
        assert out.startswith(("ConnectionError: ", "TimeoutError: ")), out
        assert nobody in out, out
    assert time.monotonic() - start < 30
