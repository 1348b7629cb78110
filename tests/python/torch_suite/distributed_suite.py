# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch's own distributed test suite (torch.testing._internal.distributed.distributed_test,
the class test/distributed/test_distributed_spawn.py runs per backend), for any backend.

    python tests/python/torch_suite/distributed_suite.py --backend libreduce \
        --reducers 2 --world-size 3 [--start-method fork] [-k PATTERN ... | --names FILE] \
        [--json OUT]

Run with the interpreter of an environment that has torch 2.x and expecttest (the project's:
scripts/python_env.sh). --backend libreduce imports libreduce.torch (from
LIBREDUCE_BUILD_DIR/python, default build/) and, with --reducers N, starts N reduce-server
processes on loopback for the whole run; with --reducers 0 each group runs the ring. Every test
spawns --world-size processes, as torch's runner does. --json writes {test: "passed" |
"failed" | "skipped" | "error"} plus messages.

An out-of-tree backend says what it implements in the suite's DistTestCases tables before the
suite is imported (as torch's own plugin backends do): libreduce is a plugin that supports
subgroups and DDP on CPU tensors (FEATURES). What stays gated to other backends by name is
listed in torch_suite/README.md.
"""

import argparse
import json
import os
import pathlib
import secrets
import signal
import subprocess
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BUILD = pathlib.Path(os.environ.get("LIBREDUCE_BUILD_DIR", ROOT / "build")).resolve()

# The suite reads its configuration from the environment at import, in the spawned ranks too
# (they re-import this module): main() sets it before anything imports torch's test modules.
sys.path.insert(0, str(BUILD / "python"))
# The suite's tables of what a backend implements that libreduce does (see the docstring).
FEATURES = ("plugin", "subgroup", "ddp")

if os.environ.get("BACKEND") == "libreduce":
    import libreduce.torch  # noqa: F401,E402  (registers the backend in every rank)
    from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402
    for feature in FEATURES:
        DistTestCases.backend_feature[feature].add("libreduce")

if "BACKEND" in os.environ:
    from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
        DistributedTest, TestDistBackend)

    import torch.multiprocessing  # noqa: E402

    class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            method = os.environ["RD_SUITE_START_METHOD"]
            self._start_processes(torch.multiprocessing.get_context(method).Process)


def start_reducers(count, workdir):
    secret = pathlib.Path(workdir) / "secret"
    secret.write_text(secrets.token_hex(16) + "\n")
    secret.chmod(0o600)
    procs, addresses = [], []
    for _ in range(count):
        proc = subprocess.Popen([str(BUILD / "src" / "reduce-server"), "--listen", "127.0.0.1:0",
                                 "--secret-file", str(secret), "--memory-limit", "512M"],
                                stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        line = proc.stdout.readline()
        if not line.startswith("LIBREDUCE_REDUCER_READY"):
            raise SystemExit("reduce-server did not start")
        addresses.append(line.split("address=")[1].split()[0])
    return procs, ",".join(addresses), secret


class Recorder(unittest.TextTestResult):
    """Keeps every test's outcome by name, for --json."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcomes = {}

    def _name(self, test):
        return test.id().rsplit(".", 1)[-1]

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcomes[self._name(test)] = {"result": "passed"}

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcomes[self._name(test)] = {"result": "failed",
                                           "message": self._exc_info_to_string(err, test)[-2000:]}

    def addError(self, test, err):
        super().addError(test, err)
        self.outcomes[self._name(test)] = {"result": "error",
                                           "message": self._exc_info_to_string(err, test)[-2000:]}

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcomes[self._name(test)] = {"result": "skipped", "message": reason}


def run_configured(args):
    """Sets the suite's environment, starts the reducers, and runs this file again under it
    (the module-level imports must see the configuration)."""
    workdir = tempfile.mkdtemp(prefix="rd-dist-suite-")
    env = dict(os.environ, BACKEND=args.backend, WORLD_SIZE=str(args.world_size),
               TEMP_DIR=workdir, OMP_NUM_THREADS="1", RD_SUITE_CHILD="1",
               RD_SUITE_START_METHOD=args.start_method)
    env.setdefault("LIBREDUCE_LOG_LEVEL", "error")
    env.pop("LIBREDUCE_REDUCERS", None)
    if args.timeout_s:
        env["LIBREDUCE_TIMEOUT_MS"] = str(args.timeout_s * 1000)
    reducers = []
    if args.backend == "libreduce" and args.reducers > 0:
        reducers, addresses, secret = start_reducers(args.reducers, workdir)
        env["LIBREDUCE_REDUCERS"] = addresses
        env["LIBREDUCE_SECRET_FILE"] = str(secret)
    try:
        return subprocess.call([sys.executable, __file__, *sys.argv[1:]], env=env)
    finally:
        for proc in reducers:
            proc.send_signal(signal.SIGTERM)
            proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="libreduce")
    parser.add_argument("--reducers", type=int, default=2)
    parser.add_argument("--world-size", type=int, default=3)
    parser.add_argument("--start-method", choices=("spawn", "fork"), default="spawn",
                        help="how each rank starts: spawn (a fresh interpreter, as torch's "
                        "runner) or fork (from the runner, torch already imported: about 5x "
                        "faster here)")
    parser.add_argument("-k", action="append", default=[], help="test name pattern (fnmatch)")
    parser.add_argument("--names", help="a file with the exact names of the tests to run")
    parser.add_argument("--json", help="write every test's outcome here")
    parser.add_argument("--timeout-s", type=int, default=0,
                        help="LIBREDUCE_TIMEOUT_MS for the ranks, in s (0: the group's)")
    args = parser.parse_args()

    if "RD_SUITE_CHILD" not in os.environ:
        return run_configured(args)
    if args.names:
        names = pathlib.Path(args.names).read_text().split()
        suite = unittest.TestSuite(TestDistBackendWithSpawn(name) for name in names)
    else:
        loader = unittest.TestLoader()
        loader.testNamePatterns = ["*%s*" % k if "*" not in k else k for k in args.k] or None
        suite = loader.loadTestsFromTestCase(TestDistBackendWithSpawn)
    runner = unittest.TextTestRunner(verbosity=2, resultclass=Recorder)
    result = runner.run(suite)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result.outcomes, indent=1, sort_keys=True))
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
