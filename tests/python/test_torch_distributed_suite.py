# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch's own distributed test suite (torch.testing._internal.distributed.distributed_test)
with BACKEND=libreduce, through real reducers and on the ring: every test of the file that
passes with gloo on this machine and this torch (torch_suite/gloo_reference.json) passes, or is
skipped by a check that names other backends (GATED), or is one of TORCH_LIMITS. The same runs
side by side with gloo's are a report under bench/results (torch_suite/README.md)."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import BUILD, has_torch_backend

pytestmark = pytest.mark.skipif(not has_torch_backend(), reason="built without torch")

SUITE = pathlib.Path(__file__).resolve().parent / "torch_suite"
# Skips by name: the suite runs these only for the backends it names.
GATED = {
    "Only gloo backend supports timeouts",
    "GLOO Batch Send Recv CPU",
    "get_future is only supported on mpi, nccl and gloo",
    "Only Gloo backend support sparse all reduce",
    "Only Gloo backend supports sparse all reduce",
}
# Tests that fail for every out-of-tree backend, whatever it does, with the reason.
TORCH_LIMITS = {
    "test_ddp_logging_data_cpu": "DDP logs the name of the group's ProcessGroup, which torch "
                                 "calls 'custom' for every registered backend, and compares it "
                                 "with dist.get_backend(), which says 'libreduce'",
}


def gloo_passes():
    reference = json.loads((SUITE / "gloo_reference.json").read_text())
    return sorted(name for name, result in reference.items()
                  if result == "passed" and name not in TORCH_LIMITS)


# require_backend's message prints a Python set, whose order changes with the hash seed.
REQUIRES_BACKEND = re.compile(r"Test requires backend (?:to be one of|libreduce to be one of) "
                              r"\{(.*)\}$")


def gated_by_name(message):
    """True where the suite skipped a test because it names other backends than ours."""
    if message in GATED or "not support DistributedDataParallel" in message:
        return True
    required = REQUIRES_BACKEND.match(message)
    return bool(required) and "libreduce" not in required.group(1)


@pytest.mark.parametrize("reducer_count", [2, 0], ids=["reducers", "ring"])
def test_every_test_gloo_passes_passes_or_is_gated_by_name(tmp_path, reducer_count):
    names = gloo_passes()
    assert len(names) > 80, "the reference lost its tests"
    (tmp_path / "names").write_text("\n".join(names))
    out = tmp_path / "outcomes.json"
    env = dict(os.environ, LIBREDUCE_BUILD_DIR=str(BUILD))
    command = [sys.executable, str(SUITE / "distributed_suite.py"), "--backend", "libreduce",
               "--reducers", str(reducer_count), "--start-method", "fork", "--names", str(tmp_path / "names"), "--json",
               str(out)]
    run = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=1200)
    assert out.exists(), run.stdout[-5000:]
    outcomes = json.loads(out.read_text())
    broken = {}
    for name in names:
        got = outcomes.get(name, {"result": "not run"})
        if got["result"] == "passed":
            continue
        if got["result"] == "skipped" and gated_by_name(got.get("message", "")):
            continue
        broken[name] = got
    assert not broken, json.dumps(broken, indent=1)[-8000:]
