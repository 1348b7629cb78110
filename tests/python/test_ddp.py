# SPDX-License-Identifier: BSD-3-Clause
"""DistributedDataParallel over libreduce against the same training over gloo: 20 steps of
a small model, 2 and 4 processes, with and without find_unused_parameters, through the
reducers and through the ring. With integer data whose gradients every summation order
adds exactly (and deterministic reducers), the parameters must be bit-identical; with random
data, allclose."""

import re

import pytest

from conftest import assert_all_ok, has_torch_backend, run_ranks

pytestmark = pytest.mark.skipif(not has_torch_backend(), reason="built without torch")

CASES = [  # ranks, data, find_unused_parameters, reducers
    (2, "exact", 0, 2),
    (2, "random", 1, 2),
    (4, "exact", 1, 2),
    (4, "random", 0, 3),
    (2, "exact", 1, 0),
    (4, "random", 1, 0),
]


@pytest.mark.parametrize("ranks, data, find_unused, reducer_count", CASES)
def test_ddp_matches_gloo(reducers, ranks, data, find_unused, reducer_count):
    addresses = reducers.start(reducer_count) if reducer_count else None
    results = run_ranks("ddp_worker.py", ranks, [data, find_unused, 20], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=240,
                        extra={"LIBREDUCE_DETERMINISTIC": "1" if data == "exact" else "0"})
    assert_all_ok(results)
    for _, out in results:
        found = re.search(r"DDP OK max_abs_diff=(\S+)", out)
        assert found, out
        if data == "exact":
            assert float(found.group(1)) == 0.0
