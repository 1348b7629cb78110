# SPDX-License-Identifier: BSD-3-Clause
"""examples/pytorch_ddp.py as a reducectl job, run exactly as its job file says."""

import re
import sys
import subprocess

import pytest

from conftest import BUILD, REDUCECTL, ROOT, has_torch_backend, run_or_show_stacks

pytestmark = pytest.mark.skipif(not has_torch_backend(), reason="built without torch")


@pytest.mark.skipif(BUILD != ROOT / "build", reason="the job file names build/")
def test_pytorch_ddp_job_trains_to_its_accuracy():
    proc = subprocess.run([str(REDUCECTL), "run", "examples/jobs/pytorch_ddp.yaml"], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout
    assert "SUCCEEDED" in proc.stdout
    assert "training on 4 ranks, backend libreduce" in proc.stdout, proc.stdout
    found = re.search(r"final test accuracy ([0-9.]+)", proc.stdout)
    assert found and float(found.group(1)) >= 0.8, proc.stdout


def test_ranks_agree_through_reducectl_launch():
    """The same program under `reducectl launch` with the ring (no reducers) and gloo as a
    reference: both must reach the accuracy."""
    for backend, reducers in (("libreduce", "0"), ("gloo", "0")):
        proc = run_or_show_stacks(
            [str(REDUCECTL), "launch", "--workers", "2", "--reducers", reducers, "--",
             sys.executable, str(ROOT / "examples/pytorch_ddp.py"), "--epochs", "3",
             "--backend", backend],
            timeout=300, cwd=ROOT,
            env={"PYTHONPATH": str(BUILD / "python"), "PATH": "/usr/bin:/bin"})
        assert proc.returncode == 0, proc.stdout
        assert "backend %s" % backend in proc.stdout, proc.stdout
