# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures for the Python suite: the freshly built package, real reduce-server processes and
groups of real worker processes.

LIBREDUCE_BUILD_DIR (default: build/) names the build tree whose python/ package and
src/reduce-server are tested.
"""

import collections
import os
import pathlib
import random
import secrets
import signal
import socket
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("LIBREDUCE_BUILD_DIR", ROOT / "build")).resolve()
PACKAGE_DIR = BUILD / "python"
REDUCE_SERVER = BUILD / "src" / "reduce-server"
REDUCECTL = BUILD / "src" / "reducectl"
WORKERS = pathlib.Path(__file__).resolve().parent / "workers"

sys.path.insert(0, str(PACKAGE_DIR))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "torch_compat: what scripts/test.sh runs again against torch 2.11 (the GPU "
        "machines'): the backend's own tests, no client libraries")


# In CI (CI=true) a skip is a failure unless nothing a setup installs could undo it: the machine
# lacks the hardware, or this run is configured without the thing on purpose.
CI = os.environ.get("CI") == "true"
ENVIRONMENTAL_SKIPS = ("CUDA", "GPU", "the job file names build/")
SKIPS_BY_CAUSE = collections.Counter()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    SKIPS_BY_CAUSE[reason] += 1
    if CI and not any(marker in reason for marker in ENVIRONMENTAL_SKIPS):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where scripts/setup.sh provides what it needs: {reason}"


def pytest_terminal_summary(terminalreporter):
    if SKIPS_BY_CAUSE:
        terminalreporter.write_line("skips by cause:")
        for reason, count in SKIPS_BY_CAUSE.most_common():
            terminalreporter.write_line(f"  {count:4d}  {reason}")


def has_torch_backend():
    return any(PACKAGE_DIR.glob("libreduce/_torch*.so"))


def free_port():
    """A free port below the ephemeral range: a port from that range may be taken meanwhile by
    an outgoing connection, even a rank's own connect to it (TCP self-connect)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral_low = int(f.read().split()[0])
    except (OSError, ValueError):
        ephemeral_low = 32768
    for _ in range(100):
        port = random.randrange(10000, max(10001, ephemeral_low - 1))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port below %d" % ephemeral_low)


class Reducers:
    """reduce-server processes on loopback, stopped (and reaped) by the fixture."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.procs = []
        self.addresses = []
        self.metrics = []  # each reducer's metrics endpoint, when started with --metrics
        self.secret_file = tmp_path / "secret"
        self.secret_file.write_text(secrets.token_hex(16) + "\n")
        self.secret_file.chmod(0o600)

    def start(self, count, secret_file=None, flags=()):
        for _ in range(count):
            proc = subprocess.Popen(
                [str(REDUCE_SERVER), "--listen", "127.0.0.1:0", "--secret-file",
                 str(secret_file or self.secret_file), "--memory-limit", "256M", *flags],
                stdout=subprocess.PIPE, text=True)
            self.procs.append(proc)
            line = proc.stdout.readline()  # the ready line, or "" if it died
            assert line.startswith("LIBREDUCE_REDUCER_READY"), "reduce-server did not start"
            self.addresses.append(line.split("address=")[1].split()[0])
            if " metrics=" in line:
                self.metrics.append(line.split(" metrics=")[1].split()[0])
        return ",".join(self.addresses)

    def kill(self, index):
        self.procs[index].kill()
        self.procs[index].wait()

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture
def reducers(tmp_path):
    r = Reducers(tmp_path)
    yield r
    r.stop()


def worker_env(rank, size, port, reducers=None, secret_file=None, extra=None):
    """The environment reducectl or torchrun would give rank @p rank."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIBREDUCE_")}
    env.update({
        "RANK": str(rank), "WORLD_SIZE": str(size), "LOCAL_RANK": str(rank),
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        "PYTHONPATH": str(PACKAGE_DIR), "OMP_NUM_THREADS": "1",
        "LIBREDUCE_LOG_LEVEL": "error",
    })
    if reducers:
        env["LIBREDUCE_REDUCERS"] = reducers
    if secret_file:
        env["LIBREDUCE_SECRET_FILE"] = str(secret_file)
    env.update(extra or {})
    return env


def run_ranks(script, size, args=(), reducers=None, secret_file=None, timeout=120, extra=None,
              per_rank_extra=None):
    """Runs @p script (in tests/python/workers) as @p size ranks; returns [(rc, output)] in
    rank order. Every process is killed if the group outlives @p timeout seconds."""
    port = free_port()
    procs = []
    for rank in range(size):
        env = worker_env(rank, size, port, reducers, secret_file, extra)
        env.update((per_rank_extra or {}).get(rank, {}))
        procs.append(subprocess.Popen(
            [sys.executable, str(WORKERS / script), *map(str, args)], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True))
    deadline = time.monotonic() + timeout
    results = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            results.append((p.returncode, out))
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    return results


def descendants(pid):
    """Every process below @p pid, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def run_or_show_stacks(argv, timeout, **kwargs):
    """subprocess.run(argv, stdout=PIPE, stderr=STDOUT, text=True, ...) within @p timeout
    seconds; past it, the test fails with every descendant's threads' stacks (gdb), so that a
    hang can be told from the log, and then they are killed."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, **kwargs)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(argv, proc.returncode, out)
    except subprocess.TimeoutExpired:
        stacks = []
        for pid in [proc.pid] + descendants(proc.pid):
            try:
                with open("/proc/%d/cmdline" % pid) as f:
                    cmdline = f.read().replace("\0", " ")
            except OSError:
                continue
            try:
                gdb = subprocess.run(
                    ["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 20"],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=60)
                frames = [line for line in gdb.stdout.splitlines()
                          if line.startswith(("#", "Thread"))]
            except (OSError, subprocess.TimeoutExpired) as e:
                frames = ["(no stacks: %s)" % e]
            stacks.append("== %d: %s\n%s" % (pid, cmdline, "\n".join(frames)))
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail("%s ran past %d s; its output:\n%s\nstacks:\n%s"
                    % (argv[:4], timeout, out, "\n".join(stacks)))


def run_scenario(reducers, script, ranks, reducer_count, args, marker, timeout=150, extra=None):
    """@p ranks ranks of @p script (in tests/python/workers) with @p args, through
    @p reducer_count reducers started from the fixture (0: the ring); every rank must exit 0
    and print @p marker. Returns [(rc, output)]."""
    addresses = reducers.start(reducer_count) if reducer_count else None
    results = run_ranks(script, ranks, args, reducers=addresses, secret_file=reducers.secret_file,
                        timeout=timeout, extra=extra)
    assert_all_ok(results)
    assert all(marker in out for _, out in results), results
    return results


def assert_all_ok(results):
    for rank, (rc, out) in enumerate(results):
        assert rc == 0, "rank %d exited %d:\n%s" % (rank, rc, out)
