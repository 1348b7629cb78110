# SPDX-License-Identifier: BSD-3-Clause
"""DDP under reducectl through a reducer failover (docs/failover.md): examples/pytorch_ddp.py in
deterministic mode, 4 ranks and 3 reducers, one reducer SIGKILLed mid-training. The job goes on
in its first attempt, reducectl starts a replacement and records the failover, and the final
parameters are bit-identical to an undisturbed run's."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from conftest import BUILD, REDUCECTL, ROOT, has_torch_backend

sys.path.insert(0, str(ROOT / "bench" / "failover"))
from readmission import reducer_pids  # noqa: E402  (the one finder of a job's reducers)

pytestmark = pytest.mark.skipif(not has_torch_backend(), reason="built without torch")

EPOCHS = 40  # about 0.1 s each here: the kill lands mid-training with time to spare


def write_spec(tmp_path, tag):
    command = [sys.executable, str(ROOT / "examples/pytorch_ddp.py")]
    args = ["--epochs", str(EPOCHS), "--deterministic",
            "--params-out", str(tmp_path / ("params-%s.bin" % tag))]
    env = [{"name": "PYTHONPATH", "value": str(BUILD / "python")}]
    rank_pool = {"command": command, "args": args, "env": env}
    spec = {
        "displayName": "ddp-failover",
        "baseOutputDirectory": str(tmp_path),
        "scheduling": {"timeout": "300s", "maxRestarts": 2},
        "libreduce": {"heartbeat_ms": 1000},
        "workerPoolSpecs": [dict(rank_pool, replicaCount=1), dict(rank_pool, replicaCount=3),
                            {"replicaCount": 3}],
    }
    path = tmp_path / ("%s.json" % tag)
    path.write_text(json.dumps(spec))
    return path


def run_job(tmp_path, tag, kill_after=None):
    """Runs the job; with @kill_after, SIGKILLs one reducer once that text is in the output.
    Returns the output and the job record."""
    job_id = "ddp-%s-%s" % (tag, uuid.uuid4().hex[:8])
    proc = subprocess.Popen([str(REDUCECTL), "run", str(write_spec(tmp_path, tag)),
                             "--job-id", job_id], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = []
    killed = None
    deadline = time.monotonic() + 400
    try:
        for line in proc.stdout:
            lines.append(line)
            if kill_after is not None and killed is None and kill_after in line:
                pids = reducer_pids(job_id)
                assert len(pids) == 3, "".join(lines)
                killed = pids[1]
                os.kill(killed, signal.SIGKILL)
            assert time.monotonic() < deadline, "".join(lines)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = "".join(lines)
    assert proc.returncode == 0, out
    if kill_after is not None:
        assert killed is not None, out
    with open(tmp_path / job_id / "reducectl" / "job.json") as f:
        return out, json.load(f)


def test_ddp_through_a_reducer_kill_is_bit_identical_in_one_attempt(tmp_path):
    out, record = run_job(tmp_path, "undisturbed")
    assert record["failovers"] == [], out
    reference = (tmp_path / "params-undisturbed.bin").read_bytes()
    assert len(reference) > 0

    out, record = run_job(tmp_path, "killed", kill_after="epoch 2:")
    assert record["state"] == "JOB_STATE_SUCCEEDED", out
    assert record["attempts"] == 1 and record["restarts"] == 0, out
    assert len(record["failovers"]) == 1, record
    failover = record["failovers"][0]
    assert failover["reducer"].startswith("reducer-"), failover
    assert "SIGKILL" in failover["cause"], failover
    assert failover["replacedAtSeconds"] >= 0, failover
    # Rank 0's view, from its events file: what the loss cost.
    assert failover["silentMs"] >= 0 and failover["stalledMs"] >= 0, failover
    assert failover["timeLostMs"] == failover["silentMs"] + failover["stalledMs"], failover
    print("failover as recorded: %s" % json.dumps(failover))
    assert "the ranks go on with the other reducers" in out, out
    assert "its chunks go to the other reducers" in out, out
    assert (tmp_path / "params-killed.bin").read_bytes() == reference, out
