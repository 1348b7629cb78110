# SPDX-License-Identifier: BSD-3-Clause
"""Point-to-point, all-to-all, gather / scatter, the monitored barrier and DDP communication
hooks of the c10d backend "libreduce", between real processes, through real reduce-server
processes and on the ring."""

import re

import pytest

from conftest import assert_all_ok, has_torch_backend, run_ranks

pytestmark = pytest.mark.skipif(not has_torch_backend(), reason="built without torch")


@pytest.mark.parametrize("scenario, marker", [("p2p", "P2P OK"), ("alltoall", "ALLTOALL OK")])
@pytest.mark.parametrize("ranks, reducer_count", [(3, 2), (4, 0)])
def test_exact_results(reducers, scenario, marker, ranks, reducer_count):
    addresses = reducers.start(reducer_count) if reducer_count else None
    results = run_ranks("torch_p2p_worker.py", ranks, [scenario], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=150)
    assert_all_ok(results)
    assert all(marker in out for _, out in results)


@pytest.mark.parametrize("reducer_count", [2, 0])
def test_ddp_communication_hooks_agree_with_gloo(reducers, reducer_count):
    addresses = reducers.start(reducer_count) if reducer_count else None
    results = run_ranks("torch_p2p_worker.py", 3, ["hooks"], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=150)
    assert_all_ok(results)
    assert all("HOOKS OK" in out for _, out in results)
    print(results[0][1])


def test_monitored_barrier_names_the_rank_that_stays_away(reducers):
    addresses = reducers.start(1)
    results = run_ranks("torch_p2p_worker.py", 3, ["monitored", 30], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=90)
    assert_all_ok(results)
    assert "MONITORED OK" in results[0][1]
    assert "STAYED AWAY" in results[2][1]


@pytest.mark.parametrize("reducer_count", [1, 0])
def test_a_peer_that_dies_fails_the_recv_naming_it_within_the_timeout(reducers, reducer_count):
    timeout_s = 10
    addresses = reducers.start(reducer_count) if reducer_count else None
    results = run_ranks("torch_p2p_worker.py", 3, ["dead_peer", timeout_s], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=90)
    assert_all_ok(results)
    for _, out in results[:2]:
        found = re.search(r"RAISED after ([0-9.]+) s: libreduce recv failed: (.*)", out)
        assert found, out
        assert float(found.group(1)) <= timeout_s + 2, out
        assert "rank 2" in found.group(2), out
