# SPDX-License-Identifier: BSD-3-Clause
"""The c10d backend "libreduce" under real torch.distributed, with real reduce-server
processes (and the ring, without reducers): collectives on every dtype and op, argument
errors, a rank that dies, and what travels through torch's store."""

import datetime
import re

import pytest

from conftest import assert_all_ok, has_torch_backend, run_ranks, run_scenario

pytestmark = pytest.mark.skipif(not has_torch_backend(), reason="built without torch")


@pytest.mark.torch_compat
@pytest.mark.parametrize("ranks, reducer_count", [(2, 2), (3, 2), (2, 0), (3, 0)])
def test_collectives(reducers, ranks, reducer_count):
    addresses = reducers.start(reducer_count) if reducer_count else None
    results = run_ranks("torch_worker.py", ranks, ["collectives"], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=150)
    assert_all_ok(results)
    assert all("COLLECTIVES OK" in out for _, out in results)


def test_bad_input_raises_at_the_call(reducers):
    addresses = reducers.start(1)
    results = run_ranks("torch_worker.py", 2, ["bad_input"], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=90)
    assert_all_ok(results)
    assert all("BAD INPUT OK" in out for _, out in results)


@pytest.mark.parametrize("reducer_count", [2, 0])
def test_dead_rank_makes_wait_raise_within_the_timeout(reducers, reducer_count):
    timeout_s = 5
    addresses = reducers.start(reducer_count) if reducer_count else None
    results = run_ranks("torch_worker.py", 3, ["dead_rank", timeout_s], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=90)
    assert_all_ok(results)
    for _, out in results[:2]:
        found = re.search(r"RAISED after ([0-9.]+) s: libreduce allreduce failed: (.*)", out)
        assert found, out
        assert float(found.group(1)) <= timeout_s + 2, out
        assert "rank 2" in found.group(2) or "ring neighbour" in found.group(2), out


def test_the_store_never_carries_the_secret(tmp_path, monkeypatch):
    import torch.distributed as dist
    from torch._C._distributed_c10d import _DistributedBackendOptions

    import libreduce.torch as backend

    secret = tmp_path / "secret"
    secret.write_text("do-not-leak\n")
    monkeypatch.setenv("LIBREDUCE_SECRET_FILE", str(secret))
    monkeypatch.delenv("LIBREDUCE_REDUCERS", raising=False)
    store = dist.HashStore()
    options = _DistributedBackendOptions()
    options.store, options.group_rank, options.group_size = store, 0, 1
    options.timeout = datetime.timedelta(seconds=10)
    options.group_id, options.global_ranks_in_group = "0", []
    group = backend._create(options, None)
    published = store.get("libreduce/unique_id")
    assert published.startswith(b"libreduce-id-v1;")
    assert b"do-not-leak".hex().encode() not in published and b"do-not-leak" not in published
    assert group.getBackendName() if hasattr(group, "getBackendName") else True
    assert dist.Backend.LIBREDUCE == "libreduce"


def test_pg_options_are_libreduces_own():
    import libreduce.torch as backend

    with pytest.raises(TypeError, match="pg_options must be libreduce.torch.Options"):
        backend._options_for(datetime.timedelta(seconds=5), object())
    with pytest.raises(ValueError, match="wire_dtype must be one of"):
        backend._options_for(datetime.timedelta(seconds=5), backend.Options(wire_dtype="fp8"))
    options = backend._options_for(7, backend.Options(wire_dtype="bf16"), "g", [3, 4])
    assert (options.wire_dtype, options._timeout) == ("bf16", datetime.timedelta(seconds=7))
    assert (options.group_name, options.global_ranks_in_group) == ("g", [3, 4])


@pytest.mark.torch_compat
@pytest.mark.parametrize("ranks, reducer_count", [(4, 2), (4, 0)], ids=["reducers", "ring"])
def test_groups_options_split_and_coalescing(reducers, ranks, reducer_count):
    run_scenario(reducers, "torch_groups_worker.py", ranks, reducer_count, ["groups"], "GROUPS OK")


@pytest.mark.torch_compat
@pytest.mark.parametrize("ranks, reducer_count", [(1, 1), (1, 0), (3, 2), (3, 0)])
def test_every_collective_through_the_dispatcher(tmp_path, reducers, ranks, reducer_count):
    run_scenario(reducers, "torch_groups_worker.py", ranks, reducer_count, ["dispatched"],
                 "DISPATCHED OK", extra={"RD_STORE_FILE": str(tmp_path / "store")})


@pytest.mark.torch_compat
def test_cpu_gloo_cuda_libreduce_routes_by_device(reducers):
    run_scenario(reducers, "torch_groups_worker.py", 2, 1, ["mixed"], "MIXED OK")


@pytest.mark.torch_compat
@pytest.mark.parametrize("reducer_count", [2, 0], ids=["reducers", "ring"])
def test_failure_get_error_abort_and_shutdown(reducers, reducer_count):
    addresses = reducers.start(reducer_count) if reducer_count else None
    results = run_ranks("torch_groups_worker.py", 3, ["failure"], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=90)
    for rc, out in results[:2]:
        assert rc == 0 and "FAILURE OK" in out, out


def test_wire_compression_option_is_checked():
    import libreduce.torch as backend

    with pytest.raises(ValueError, match="wire_dtype must be one of none, bf16, fp16"):
        backend.set_options(wire_dtype="fp8")


def test_compressed_gradients_are_summed_in_float32(reducers):
    addresses = reducers.start(2)
    results = run_ranks("torch_worker.py", 3, ["compressed"], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=90,
                        extra={"LIBREDUCE_DETERMINISTIC": "1"})
    assert_all_ok(results)
    assert all("COMPRESSED OK" in out for _, out in results), results
