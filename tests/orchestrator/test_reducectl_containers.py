# SPDX-License-Identifier: BSD-3-Clause
"""Replicas in containers: pools with a containerSpec run under podman (real podman, an image
built here from the project's own build: its programs and the libraries they load, imported as a
root filesystem; no registry). Every test checks at its end that no process and no container of
its job is left. Skipped with the reason where podman cannot run containers here.
"""

import os
import resource
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
import unittest
import uuid

from test_reducectl_jobs import BUILD, DEMO, REDUCECTL, kill_leftovers, main, write_job_spec

IMAGE = "localhost/libreduce-test:" + uuid.uuid4().hex[:8]
VERTEX_REDUCER = "us-docker.pkg.dev/vertex-ai-training/training/reductionserver:latest"


def shared_libraries(paths):
    """Every library @paths load (ldd), and UCX's transport modules with theirs."""
    found, todo = set(), list(paths)
    ucx_modules = "/usr/lib/x86_64-linux-gnu/ucx"
    if os.path.isdir(ucx_modules):
        todo += [os.path.join(ucx_modules, m) for m in os.listdir(ucx_modules)]
    while todo:
        path = todo.pop()
        if path in found:
            continue
        found.add(path)
        out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
        for word in out.split():
            if word.startswith("/") and os.path.exists(word) and word not in found:
                todo.append(word)
    return found


def build_image(workdir):
    """A root filesystem of reduce-server, the demo, /bin/true and what they load; imported."""
    programs = [os.path.abspath(os.path.join(BUILD, "src/reduce-server")),
                os.path.abspath(DEMO), "/bin/true", "/bin/sleep"]
    tar_path = os.path.join(workdir, "rootfs.tar")
    with tarfile.open(tar_path, "w") as tar:
        for path in sorted(shared_libraries(programs)):
            tar.add(os.path.realpath(path), arcname=path.lstrip("/"))
    subprocess.run(["podman", "import", "-q", tar_path, IMAGE], check=True,
                   capture_output=True)


def compat_conf(path):
    """For hosts where podman's defaults cannot start a container (no CAP_SYS_RESOURCE to raise
    rlimits, cgroup v1 with an empty v2 hierarchy beside it): the host's limits, cgroupfs, runc."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[1], 32768)
    with open(path, "w") as f:
        f.write(f'[containers]\ndefault_ulimits = ["nofile={nofile}:{nofile}", '
                f'"nproc={nproc}:{nproc}"]\n[engine]\ncgroup_manager = "cgroupfs"\n'
                'runtime = "runc"\n')


def podman_runs(env):
    return subprocess.run(["podman", "run", "--rm", "--pull=never", "--network=host", "--init",
                           IMAGE, "/bin/true"], capture_output=True, text=True, env=env)


class ContainerTests(unittest.TestCase):
    env = None
    skip_reason = None

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="reducectl-image-")
        if shutil.which("podman") is None:
            cls.skip_reason = "podman is not installed (scripts/setup.sh installs it)"
            return
        try:
            build_image(cls.work)
        except subprocess.CalledProcessError as e:
            cls.skip_reason = f"podman import failed: {e.stderr}"
            return
        env = dict(os.environ)
        tried = podman_runs(env)
        if tried.returncode != 0:
            conf = os.path.join(cls.work, "containers.conf")
            compat_conf(conf)
            env["CONTAINERS_CONF"] = conf
            retried = podman_runs(env)
            if retried.returncode != 0:
                cls.skip_reason = ("podman cannot run a container here: " + tried.stderr.strip()
                                   + " / with " + conf + ": " + retried.stderr.strip())
                return
        cls.env = env

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["podman", "rmi", "--force", IMAGE], capture_output=True)
        shutil.rmtree(cls.work, ignore_errors=True)

    def setUp(self):
        if self.skip_reason:
            self.skipTest(self.skip_reason)
        self.tmp = tempfile.TemporaryDirectory(prefix="reducectl-containers-")
        self.dir = self.tmp.name
        self.job_id = "c" + uuid.uuid4().hex[:12]

    def tearDown(self):
        leftover = kill_leftovers(self.job_id, grace=10)
        containers = self.containers()
        for name in containers:
            subprocess.run(["podman", "rm", "--force", "--time", "0", name], capture_output=True)
        self.tmp.cleanup()
        self.assertEqual(leftover, [], "processes of the job outlived reducectl")
        self.assertEqual(containers, [], "containers of the job outlived reducectl")

    def containers(self):
        out = subprocess.run(["podman", "ps", "--all", "--format", "{{.Names}}"],
                             capture_output=True, text=True, env=self.env).stdout
        return [n for n in out.split() if n.startswith(f"reducectl-{self.job_id}-")]

    def write_spec(self, pools, **top):
        return write_job_spec(self.dir, "containers", pools, **top)

    def run_job(self, spec_path, *flags, timeout=180):
        proc = subprocess.run([REDUCECTL, "run", spec_path, "--job-id", self.job_id,
                               "--stop-grace", "3", *flags],
                              capture_output=True, text=True, timeout=timeout, env=self.env)
        return proc.returncode, proc.stdout, proc.stderr

    def demo_pool(self, count):
        return {"replicaCount": count,
                "containerSpec": {"imageUri": IMAGE,
                                  "command": [os.path.abspath(DEMO)],
                                  "args": ["--max-bytes", "256K", "--iters", "1",
                                           "--warmup", "0"]}}

    def test_quickstart_with_every_replica_in_a_container(self):
        reducers = {"replicaCount": 2,
                    "containerSpec": {"imageUri": IMAGE,
                                      "command": [os.path.abspath(
                                          os.path.join(BUILD, "src/reduce-server"))],
                                      "args": ["--listen", "127.0.0.1:0"]}}
        spec = self.write_spec([self.demo_pool(1), self.demo_pool(3), reducers])
        code, out, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        self.assertIn("[primary-0] PASSED: 0 wrong", out)
        self.assertIn(f"job {self.job_id} SUCCEEDED", err)

    def test_vertex_reduction_server_image_is_the_built_in_reducer(self):
        spec = self.write_spec([self.demo_pool(1), self.demo_pool(1),
                                {"replicaCount": 1, "containerSpec": {"imageUri": VERTEX_REDUCER}}])
        code, out, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        self.assertIn("is Vertex AI's reduction server: the built-in reduce-server runs instead",
                      err)
        self.assertIn("PASSED: 0 wrong", out)

    def test_missing_image_is_refused_before_anything_starts(self):
        spec = self.write_spec([{"replicaCount": 1,
                                 "containerSpec": {"imageUri": "localhost/no-such-image:1"}}])
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 1, err)
        self.assertIn("the primary pool's image localhost/no-such-image:1 is not present locally "
                      "(reducectl never pulls)", err)

    def test_sigint_stops_the_containers(self):
        sleeper = {"replicaCount": 1, "containerSpec": {"imageUri": IMAGE,
                                                        "command": ["/bin/sleep", "322"]}}
        spec = self.write_spec([sleeper, dict(sleeper, replicaCount=2)])
        proc = subprocess.Popen([REDUCECTL, "run", spec, "--job-id", self.job_id,
                                 "--stop-grace", "3"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env)
        deadline = time.monotonic() + 60
        while len(self.containers()) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertEqual(len(self.containers()), 3, "the three containers did not start")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 128 + signal.SIGINT, err)
        self.assertIn("CANCELLED", err)


if __name__ == "__main__":
    main()
