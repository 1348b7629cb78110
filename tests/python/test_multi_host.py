# SPDX-License-Identifier: BSD-3-Clause
"""Ranks on separate hosts and no reducers: each rank in a network namespace of its own (198.18.0.0/15
addresses only, torn down after each test), so that no rank shares the others' loopback. The
rendezvous rank 0 hands out must be an address the other hosts reach, through the torch backend
and through the C API; and a rank that cannot reach it says so at the default log level within
seconds and fails by LIBREDUCE_CONNECT_TIMEOUT_MS naming the address, not after the group's
timeout."""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from conftest import BUILD, REDUCECTL, ROOT, WORKERS, has_torch_backend

sys.path.insert(0, str(ROOT / "bench" / "cluster"))
from netns import Topology  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
WORKER_CHECK = BUILD / "tests" / "rd_worker_check"
# Long enough that a test that waited for it would be seen to hang.
GROUP_TIMEOUT_S = 600


@pytest.fixture
def hosts():
    """Two hosts, each a namespace with one interface on 198.18.0.0/16."""
    topology = Topology("rdt" + uuid.uuid4().hex[:6], workers=2, reducers=0, rate="none")
    with topology:
        yield topology.workers
        topology.kill_processes()


def host_env(rank, size, extra=None):
    """A rank's environment as a cluster without a launcher gives it: no MASTER_ADDR, the
    default log level."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LIBREDUCE_") and k not in ("MASTER_ADDR", "MASTER_PORT")}
    env.update({"RANK": str(rank), "WORLD_SIZE": str(size), "OMP_NUM_THREADS": "1"})
    env.update(extra or {})
    return env


def start_on(host, argv, env):
    return subprocess.Popen(host.exec_prefix() + argv, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def worker_check(id_file):
    return [str(WORKER_CHECK), "--id-file", str(id_file), "--id-reducers", "", "--counts",
            "1,1000", "--dtypes", "float32", "--ops", "sum"]


@pytest.mark.skipif(not WORKER_CHECK.exists(), reason="built without the tests")
def test_c_api_ring_across_hosts_finds_a_routable_rendezvous(tmp_path, hosts):
    id_file = tmp_path / "id"
    env = {"LIBREDUCE_TIMEOUT_MS": "30000"}
    procs = [start_on(hosts[rank], worker_check(id_file), host_env(rank, 2, env))
             for rank in range(2)]
    outs = [p.communicate(timeout=90)[0] for p in procs]
    for rank, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0 and re.search(r"worker \d: [1-9]\d* checks, 0 failed", out), \
            "rank %d:\n%s" % (rank, out)
    # The rendezvous is at rank 0's address on its only interface, not at a loopback address.
    assert hosts[0].addr.split("/")[0].encode() in id_file.read_bytes()


@pytest.mark.skipif(not WORKER_CHECK.exists(), reason="built without the tests")
def test_unreachable_rendezvous_warns_within_seconds_and_fails_by_the_connect_deadline(
        tmp_path, hosts):
    id_file = tmp_path / "id"
    # Rank 0 publishes a loopback rendezvous, as it did before it looked for a routable
    # address: rank 1, on another host, cannot reach it.
    timeouts = {"LIBREDUCE_TIMEOUT_MS": str(GROUP_TIMEOUT_S * 1000),
                "LIBREDUCE_CONNECT_TIMEOUT_MS": "6000"}
    rank0 = start_on(hosts[0], worker_check(id_file),
                     host_env(0, 2, dict(timeouts, LIBREDUCE_LISTEN_HOST="127.0.0.1")))
    try:
        deadline = time.monotonic() + 30
        while not id_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert id_file.exists(), "rank 0 published no id"
        start = time.monotonic()
        rank1 = start_on(hosts[1], worker_check(id_file), host_env(1, 2, timeouts))
        lines = []
        warned_after = None
        for line in rank1.stdout:  # the warning comes while it still retries
            lines.append(line)
            if warned_after is None and "cannot connect to rendezvous 127.0.0.1:" in line:
                warned_after = time.monotonic() - start
        rank1.wait(timeout=30)
        took = time.monotonic() - start
    finally:
        rank0.kill()
        rank0.wait()
    out = "".join(lines)
    assert warned_after is not None and warned_after < 5, out
    assert rank1.returncode != 0, out
    assert 6 <= took < 20, "failed after %.1f s:\n%s" % (took, out)
    failure = re.search(r"worker 1: error: rdCommInitRank: (.*)", out)
    assert failure, out
    assert re.search(r"cannot connect to rendezvous 127\.0\.0\.1:\d+ within 6000 ms", failure.group(1))
    assert "loopback" in failure.group(1) and "LIBREDUCE_LISTEN_HOST" in failure.group(1)


@pytest.mark.skipif(not has_torch_backend(), reason="built without torch")
@pytest.mark.parametrize("ranks", [2, 4])
def test_torch_ranks_on_separate_hosts_without_reducers(ranks):
    """The issue's case: `reducectl launch --reducers 0 --emulate-network`, init_process_group
    ("libreduce") with the default 30-minute timeout."""
    run = subprocess.run(
        [str(REDUCECTL), "launch", "--workers", str(ranks), "--reducers", "0",
         "--emulate-network", "--nic-gbps", "1", "--", sys.executable,
         str(WORKERS / "torch_hosts_worker.py")],
        env=dict(os.environ, PYTHONPATH=str(BUILD / "python")), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=240)
    assert run.returncode == 0, run.stdout
    assert run.stdout.count("HOSTS OK") == ranks, run.stdout


@pytest.mark.skipif(not has_torch_backend(), reason="built without torch")
def test_torch_join_that_cannot_connect_fails_by_the_connect_deadline(tmp_path, hosts):
    """Rank 1 of a torch group whose rendezvous it cannot reach fails in seconds, not after the
    group's timeout."""
    master = hosts[0].addr.split("/")[0]
    common = {"MASTER_ADDR": master, "MASTER_PORT": "29611", "PYTHONPATH": str(BUILD / "python"),
              "LIBREDUCE_CONNECT_TIMEOUT_MS": "6000", "RD_GROUP_TIMEOUT_S": str(GROUP_TIMEOUT_S)}
    argv = [sys.executable, str(WORKERS / "torch_hosts_worker.py")]
    rank0 = start_on(hosts[0], argv, host_env(0, 2, dict(common, LIBREDUCE_LISTEN_HOST="127.0.0.1")))
    try:
        start = time.monotonic()
        rank1 = start_on(hosts[1], argv, host_env(1, 2, common))
        out = rank1.communicate(timeout=120)[0]
        took = time.monotonic() - start
    finally:
        rank0.kill()
        rank0.wait()
    assert rank1.returncode != 0, out
    assert took < 60, "failed after %.1f s:\n%s" % (took, out)
    assert re.search(r"cannot connect to rendezvous 127\.0\.0\.1:\d+ within 6000 ms", out), out


@pytest.mark.skipif(not has_torch_backend(), reason="built without torch")
def test_master_addr_naming_rank_0s_host_that_resolves_to_loopback_there(hosts):
    """Debian's and Ubuntu's /etc/hosts: on rank 0's host its own name resolves to 127.0.1.1,
    while the other hosts resolve it to its real address (each namespace gets its own hosts file
    through `ip netns exec`). MASTER_ADDR is that name."""
    name = "rdmaster-" + uuid.uuid4().hex[:6]
    master = hosts[0].addr.split("/")[0]
    dirs = [pathlib.Path("/etc/netns") / host.netns for host in hosts]
    try:
        for i, d in enumerate(dirs):
            d.mkdir(parents=True)
            (d / "hosts").write_text("127.0.0.1 localhost\n%s %s\n"
                                     % ("127.0.1.1" if i == 0 else master, name))
        common = {"MASTER_ADDR": name, "MASTER_PORT": "29612",
                  "PYTHONPATH": str(BUILD / "python"), "RD_GROUP_TIMEOUT_S": "60",
                  "LIBREDUCE_CONNECT_TIMEOUT_MS": "10000"}
        argv = [sys.executable, str(WORKERS / "torch_hosts_worker.py")]
        procs = [start_on(host, argv, host_env(rank, 2, common))
                 for rank, host in enumerate(hosts)]
        outs = [p.communicate(timeout=120)[0] for p in procs]
    finally:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    for rank, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0 and "HOSTS OK" in out, "rank %d:\n%s" % (rank, out)
