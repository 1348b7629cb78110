# SPDX-License-Identifier: BSD-3-Clause
"""`pip install .` as a user does it: a new virtual environment that has torch, pip's isolated
build (scikit-build-core over the project's CMake), and then a 2-rank torch job through a
reducer started by the installed reducectl, with the installed package only."""

import os
import pathlib
import re
import subprocess
import sys
import sysconfig

import pytest

from conftest import ROOT, has_torch_backend

pytestmark = pytest.mark.skipif(not has_torch_backend(), reason="built without torch")

JOB = """
import torch, torch.distributed as dist
import libreduce.torch
dist.init_process_group("libreduce")
t = torch.full((1 << 16,), float(dist.get_rank() + 1))
dist.all_reduce(t)
assert torch.equal(t, torch.full_like(t, 3.0)), t
print("PIP JOB OK", dist.get_rank(), libreduce.torch.__file__)
dist.destroy_process_group()
"""


def test_pip_install_then_a_two_rank_job(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = pathlib.Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, stdout=subprocess.PIPE, text=True).stdout.strip())
    # torch from the project's environment (a second copy would be 5 GB): the new environment
    # sees it as installed, as a user's would.
    (site / "torch-from-the-project.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = "%s:%s" % (venv / "bin", env["PATH"])
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
         "--config-settings=build-dir=%s" % (tmp_path / "build"), str(ROOT)],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=1500)
    assert install.returncode == 0, install.stdout[-6000:]
    for command in ("reduce-server", "reducectl", "reduce-info"):
        assert (venv / "bin" / command).exists(), command
    info = subprocess.run([str(venv / "bin" / "reduce-info")], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=60)
    assert info.returncode == 0 and re.search(r"PyTorch backend +yes", info.stdout), info.stdout
    (tmp_path / "job.py").write_text(JOB)
    job = subprocess.run(
        [str(venv / "bin" / "reducectl"), "launch", "--workers", "2", "--reducers", "1", "--",
         str(python), str(tmp_path / "job.py")],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=300)
    assert job.returncode == 0, job.stdout[-6000:]
    assert job.stdout.count("PIP JOB OK") == 2, job.stdout
    # The package the job imported is the installed one, next to its own library.
    assert str(site / "libreduce" / "torch.py") in job.stdout, job.stdout
