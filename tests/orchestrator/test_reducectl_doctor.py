# SPDX-License-Identifier: BSD-3-Clause
"""`reducectl doctor` against real reducers: a healthy pool (reached, joined, probed, the UCX
transport its link settled on named, its clock read from its metrics), a wrong secret, a reducer
down beside a healthy one, and a slow link: a job under --emulate-network whose NICs are
100 Mbit/s runs the doctor as its rank against its own reducers, expecting 1 Gbit/s. Each problem is named in the verdict, on the reducer it is."""

import os
import re
import subprocess
import time

from test_reducectl_jobs import (BUILD, REDUCECTL, JobCase, can_make_namespaces, main, pool,
                                 sh)

REDUCE_SERVER = os.path.join(BUILD, "src/reduce-server")


class Reducer:
    """One reduce-server on loopback with a secret and a metrics endpoint."""

    def __init__(self, directory, name):
        self.secret = os.path.join(directory, name + ".secret")
        with open(os.open(self.secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(name + "-a-secret-of-this-test-only\n")
        self.proc = subprocess.Popen(
            [REDUCE_SERVER, "--listen", "127.0.0.1:0", "--secret-file", self.secret,
             "--metrics", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)
        line = self.proc.stdout.readline()
        self.address = re.search(r"address=(\S+)", line).group(1)
        self.metrics = re.search(r"metrics=(\S+)", line).group(1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.communicate(timeout=30)


def doctor(*args, timeout=120):
    done = subprocess.run([REDUCECTL, "doctor", "--probe-mib", "2", *args], capture_output=True,
                          text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


class DoctorTests(JobCase):
    def setUp(self):
        super().setUp()
        self.reducers = []

    def tearDown(self):
        for r in self.reducers:
            r.stop()
        super().tearDown()

    def reducer(self, name):
        r = Reducer(self.dir, name)
        self.reducers.append(r)
        return r

    def test_a_healthy_pool_is_called_healthy(self):
        a = self.reducer("a")
        code, out, err = doctor("--reducers", a.address, "--secret-file", a.secret, "--metrics",
                                a.metrics, "--expect-gbps", "0.1")
        self.assertEqual(code, 0, out + err)
        self.assertIn(f"reducer 0 ({a.address}): healthy: joined with the job's secret", out)
        self.assertIn("reached from 127.0.0.1 on lo", out)
        self.assertRegex(out, r"carried by [\w-]+/[\w:.-]+\S* \(UCX, from here\)")
        skew = float(re.search(r"clock ([-+][0-9.]+) s from this host's", out).group(1))
        self.assertLess(abs(skew), 1.0, "one machine, one clock")
        self.assertIn("verdict: every reducer is healthy", out)

    def test_a_wrong_secret_is_named(self):
        a = self.reducer("a")
        other = self.reducer("other")
        code, out, err = doctor("--reducers", a.address, "--secret-file", other.secret)
        self.assertEqual(code, 1, out + err)
        self.assertIn(f"reducer 0 ({a.address}) refuses the job's secret", out)
        self.assertIn("verdict: 1 of 1 reducers need attention", out)
        self.assertIsNone(a.proc.poll(), "the reducer survives the refused probe")

    def test_a_reducer_down_is_named_beside_a_healthy_one(self):
        a = self.reducer("a")
        gone = self.reducer("gone")
        gone.stop()
        code, out, err = doctor("--reducers", f"{a.address},{gone.address}", "--secret-file",
                                a.secret)
        self.assertEqual(code, 1, out + err)
        self.assertIn(f"reducer 0 ({a.address}): healthy", out)
        self.assertIn(f"reducer 1 ({gone.address}) is not reachable: Connection refused", out)

    def test_a_slow_link_under_emulate_network_is_named(self):
        if not can_make_namespaces():
            self.skipTest("needs root and ip(8) to create network namespaces")
        # The job's rank runs the doctor against the job's own reducers (LIBREDUCE_REDUCERS,
        # LIBREDUCE_SECRET_FILE), from behind a 100 Mbit/s NIC, expecting 1 Gbit/s.
        report = os.path.join(self.dir, "doctor.txt")
        nic = {"nicGbps": 0.1}
        check = sh(f"{REDUCECTL} doctor --expect-gbps 1 --probe-mib 2 > {report} 2>&1; "
                   f"echo doctor-exit=$? >> {report}")
        spec = self.write_spec([pool(1, check, resources=nic), pool(0, None),
                                pool(1, None, resources=nic)])
        code, out, err = self.run_job(spec, "--emulate-network", timeout=180)
        self.assertEqual(code, 0, err)
        with open(report) as f:
            text = f.read()
        self.assertIn("doctor-exit=1", text)
        match = re.search(r"reducer 0 \(198\.18\.1\.1:\d+\) is slow: measured ([0-9.]+) Gbit/s "
                          r"each way over (\S+), expected 1\.00 \(--expect-gbps\)", text)
        self.assertIsNotNone(match, text)
        self.assertLess(float(match.group(1)), 0.1 * 1.1, "a 100 Mbit/s NIC cannot carry more")
        # The verdict names what carries the link: UCX on the emulated NIC, the one shaped.
        self.assertIn("/eth0", match.group(2), text)
        self.assertIn("reached from 198.18.0.1 on eth0", text)


if __name__ == "__main__":
    main()
