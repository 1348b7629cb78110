# SPDX-License-Identifier: BSD-3-Clause
"""What PyTorch 2.x builds on a process group, on libreduce and on gloo side by side: FSDP2,
DTensor, the functional collectives and a torch.compile'd model under DDP (the worker,
workers/torch_clients_worker.py, says what each does). Every result must equal gloo's to the
bit: 2 ranks, whose sums do not depend on the order they are added in, and the reducers in
deterministic mode."""

import sys

import pytest
import torch

from conftest import (WORKERS, assert_all_ok, free_port, has_torch_backend, run_or_show_stacks,
                      run_ranks, worker_env)

pytestmark = pytest.mark.skipif(not has_torch_backend(), reason="built without torch")

SCENARIOS = ["fsdp2", "dtensor", "functional", "compile_ddp"]


def run_scenario(tmp_path, scenario, backend, reducers=None, secret_file=None, ranks=2):
    out = tmp_path / ("%s-%s-%s.pt" % (scenario, backend, "rs" if reducers else "ring"))
    results = run_ranks("torch_clients_worker.py", ranks, [scenario, out], reducers=reducers,
                        secret_file=secret_file, timeout=300,
                        extra={"BACKEND": backend, "LIBREDUCE_DETERMINISTIC": "1",
                               "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")})
    assert_all_ok(results)
    assert all("%s OK" % scenario.upper() in text for _, text in results), results
    return torch.load(out)


def assert_same(got, want, what):
    assert sorted(got) == sorted(want), "%s: results %s, gloo's %s" % (what, sorted(got),
                                                                        sorted(want))
    for name in want:
        assert got[name].dtype == want[name].dtype and got[name].shape == want[name].shape, name
        different = int((got[name] != want[name]).sum())
        assert different == 0, "%s: %s differs from gloo's in %d of %d elements:\n%s\n%s" % (
            what, name, different, got[name].numel(), got[name], want[name])


@pytest.mark.torch_compat
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_same_results_as_gloo(tmp_path, reducers, scenario):
    if scenario == "compile_ddp":
        pytest.importorskip("torch._inductor")
    want = run_scenario(tmp_path, scenario, "gloo")
    assert want, "gloo produced no results"
    addresses = reducers.start(2)
    assert_same(run_scenario(tmp_path, scenario, "libreduce", addresses, reducers.secret_file),
                want, scenario + " through 2 reducers")
    assert_same(run_scenario(tmp_path, scenario, "libreduce"), want, scenario + " on the ring")


def run_lightning(tmp_path, backend, reducers=None, secret_file=None):
    out = tmp_path / ("lightning-%s-%s.pt" % (backend, "rs" if reducers else "ring"))
    # One process: Lightning starts the second rank itself and chooses MASTER_ADDR / PORT; a
    # launcher's RANK / LOCAL_RANK would make it believe it had already been started.
    env = worker_env(0, 1, free_port(), reducers, secret_file, {"LIBREDUCE_DETERMINISTIC": "1"})
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name)
    run = run_or_show_stacks([sys.executable, str(WORKERS / "lightning_worker.py"), backend,
                              str(out)], timeout=300, env=env, cwd=tmp_path)
    assert run.returncode == 0 and "LIGHTNING OK (backend %s)" % backend in run.stdout, run.stdout
    return torch.load(out)


def test_lightning_ddp_strategy_trains_as_with_gloo(tmp_path, reducers):
    pytest.importorskip("lightning")
    want = run_lightning(tmp_path, "gloo")
    addresses = reducers.start(2)
    assert_same(run_lightning(tmp_path, "libreduce", addresses, reducers.secret_file), want,
                "Lightning through 2 reducers")
    assert_same(run_lightning(tmp_path, "libreduce"), want, "Lightning on the ring")
