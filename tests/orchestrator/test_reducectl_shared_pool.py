# SPDX-License-Identifier: BSD-3-Clause
"""Jobs attached to a shared reducer pool (`reducerPool:` in the spec): a reduce-server with
--pool-secret-file that no job owns, a key per job from `reducectl pool key`, two jobs through it
at once each verified, a key others can read refused before anything starts, another job's key
refused by the reducers. Real reducectl, reduce-server and replica processes."""

import os
import re
import subprocess
import tempfile
import time

from test_reducectl_jobs import (BUILD, DEMO, REDUCECTL, JobCase, kill_leftovers, main, pool,
                                 write_job_spec)

REDUCE_SERVER = os.path.join(BUILD, "src/reduce-server")
DEMO_ARGS = [DEMO, "--max-bytes", "256K", "--iters", "2", "--warmup", "0"]


class SharedPool:
    """One reduce-server serving a pool, with its secret; stopped by stop()."""

    def __init__(self, directory):
        self.dir = directory
        self.secret = os.path.join(directory, "pool.secret")
        with open(os.open(self.secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write("a-pool-secret-only-the-operator-holds\n")
        ready = os.path.join(directory, "pool.ready")
        self.proc = subprocess.Popen([REDUCE_SERVER, "--listen", "127.0.0.1:0",
                                      "--pool-secret-file", self.secret, "--ready-file", ready],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not os.path.exists(ready) and time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("the pool's reducer exited: " + self.proc.stderr.read())
            time.sleep(0.05)
        with open(ready) as f:
            self.address = re.search(r"address=(\S+)", f.read()).group(1)

    def key(self, comm_id, name):
        """A job key for @comm_id in DIR/NAME, through `reducectl pool key --out`."""
        path = os.path.join(self.dir, name)
        subprocess.run([REDUCECTL, "pool", "key", comm_id, "--secret-file", self.secret,
                        "--out", path], check=True, timeout=30)
        return path

    def stop(self):
        self.proc.terminate()
        self.proc.communicate(timeout=30)


class SharedPoolTests(JobCase):
    def setUp(self):
        super().setUp()
        self.pool = SharedPool(self.dir)

    def tearDown(self):
        self.pool.stop()
        super().tearDown()

    def shared_spec(self, directory, key_file, comm_id):
        return write_job_spec(directory, "shared", [pool(1, DEMO_ARGS), pool(1, DEMO_ARGS)],
                              reducerPool={"addresses": [self.pool.address],
                                           "keyFile": key_file, "commId": comm_id})

    def test_two_jobs_share_the_pool_each_verified(self):
        other_dir = tempfile.mkdtemp(dir=self.dir)
        first = self.start(self.shared_spec(self.dir, self.pool.key("team-a", "a.key"), "team-a"))
        second = subprocess.Popen(
            [REDUCECTL, "run", self.shared_spec(other_dir, self.pool.key("team-b", "b.key"),
                                                "team-b"),
             "--job-id", self.job_id + "-b", "--stop-grace", "3"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for proc in (first, second):
            out, err = proc.communicate(timeout=120)
            self.assertEqual(proc.returncode, 0, err)
            self.assertIn("PASSED: 0 wrong", out)
            self.assertIn("attached to the shared reducer pool " + self.pool.address +
                          " as communicator team-", err)
        self.assertIsNone(self.pool.proc.poll(), "the pool's reducer outlives its jobs")
        self.assertEqual(kill_leftovers(self.job_id + "-b"), [])

    def test_a_key_others_can_read_is_refused_before_anything_starts(self):
        key = self.pool.key("team-a", "a.key")
        os.chmod(key, 0o644)
        code, out, err = self.run_job(self.shared_spec(self.dir, key, "team-a"))
        self.assertNotEqual(code, 0)
        self.assertIn("reducerPool.keyFile:", err)
        self.assertIn("accessible by group or others", err)
        self.assertNotIn("PASSED", out)

    def test_another_jobs_key_is_refused_by_the_reducers(self):
        spec = self.shared_spec(self.dir, self.pool.key("team-b", "b.key"), "team-a")
        code, _, err = self.run_job(spec, timeout=120)
        self.assertEqual(code, 1, err)
        logs = ""
        for name in ("primary-0.log", "worker-0.log"):
            with open(os.path.join(self.dir, self.job_id, "reducectl", name)) as f:
                logs += f.read()
        self.assertIn("authentication failed", logs)


if __name__ == "__main__":
    main()
