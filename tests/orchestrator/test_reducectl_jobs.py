# SPDX-License-Identifier: BSD-3-Clause
"""Whole jobs through `reducectl run`: real reducectl, real reduce-server and replica processes.

Every test gives its job a unique id and, at the end, looks for any process on the machine whose
environment carries CLOUD_ML_JOB_ID=<that id> (every replica and whatever it starts inherits it):
none may be left, whatever way the job ended. Paths come from the environment CTest sets:
REDUCECTL, RD_BUILD_DIR, RD_SOURCE_DIR.
"""

import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

REDUCECTL = os.environ.get("REDUCECTL", "build/src/reducectl")
BUILD = os.environ.get("RD_BUILD_DIR", "build")
SOURCE = os.environ.get("RD_SOURCE_DIR", ".")
PYTHON = "/usr/bin/python3"
ENV_CHECK = os.path.join(SOURCE, "tests/orchestrator/check_replica_env.py")
DEMO = os.path.join(BUILD, "examples/allreduce_demo")


def process_alive(pid):
    """True while @pid runs (a zombie waiting to be reaped has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as s:
            return not s.read().split(") ")[-1].startswith("Z")
    except OSError:
        return False


def job_processes(job_id):
    """Pids of live processes whose environment names this job."""
    marker = ("CLOUD_ML_JOB_ID=" + job_id).encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    with open(f"/proc/{entry}/stat") as s:
                        if s.read().split(") ")[-1].startswith("Z"):
                            continue  # a zombie about to be reaped holds nothing
                    found.append(int(entry))
        except OSError:
            continue
    return found


def kill_leftovers(job_id, grace=0.0):
    """Processes of the job still alive after @grace seconds, each SIGKILLed (the test then
    fails on them, and they do not outlive it)."""
    deadline = time.monotonic() + grace
    while job_processes(job_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    leftover = job_processes(job_id)
    for pid in leftover:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return leftover


def can_make_namespaces():
    return os.geteuid() == 0 and shutil.which("ip") is not None and subprocess.run(
        ["ip", "netns", "list"], capture_output=True).returncode == 0


def pool(count, command, **extra):
    spec = {"replicaCount": count}
    if command is not None:
        spec["command"] = command
    spec.update(extra)
    return spec


def sh(script):
    return ["/bin/sh", "-c", script]


def write_job_spec(directory, name, pools, **top):
    """DIRECTORY/job.json: a job NAME of @pools writing under DIRECTORY, with @top's fields."""
    spec = {"displayName": name, "baseOutputDirectory": directory, "workerPoolSpecs": pools}
    spec.update(top)
    path = os.path.join(directory, "job.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


class JobCase(unittest.TestCase):
    """A job of its own per test (under a temporary directory), and no process of it left."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="reducectl-test-")
        self.dir = self.tmp.name
        self.job_id = "t" + uuid.uuid4().hex[:12]

    def tearDown(self):
        leftover = kill_leftovers(self.job_id)
        self.tmp.cleanup()
        self.assertEqual(leftover, [], "processes of the job outlived reducectl")

    def write_spec(self, pools, **top):
        return write_job_spec(self.dir, "test", pools, **top)

    def start(self, spec_path, *flags):
        cmd = [REDUCECTL, "run", spec_path, "--job-id", self.job_id, "--stop-grace", "3", *flags]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def detach(self, spec_path):
        """Starts the job in the background, with a job registry of the test's own; returns the
        finished `run --detach` and the environment that finds the job by id."""
        env = dict(os.environ, XDG_STATE_HOME=os.path.join(self.dir, "state"))
        proc = subprocess.run([REDUCECTL, "run", spec_path, "--detach", "--job-id", self.job_id],
                              capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc, env

    def run_job(self, spec_path, *flags, timeout=120):
        proc = self.start(spec_path, *flags)
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err

    def record(self):
        with open(os.path.join(self.dir, self.job_id, "reducectl/job.json")) as f:
            return json.load(f)

    def assert_gone(self, seconds=5.0):
        deadline = time.monotonic() + seconds
        while job_processes(self.job_id) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(job_processes(self.job_id), [])


class JobTests(JobCase):
    # -- outcomes -------------------------------------------------------------------------

    def test_success_with_reducers_runs_verified_allreduces(self):
        demo = [DEMO, "--max-bytes", "64K", "--iters", "1", "--warmup", "0"]
        spec = self.write_spec([pool(1, demo), pool(2, demo), pool(2, None),
                                pool(1, sh("exec sleep 301"))])
        code, out, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        self.assertIn("PASSED: 0 wrong", out)
        self.assertIn("[primary-0]", out)
        self.assertIn("SUCCEEDED", err)
        rec = self.record()
        self.assertEqual(rec["state"], "JOB_STATE_SUCCEEDED")
        results = {r["name"]: r for r in rec["replicas"]}
        self.assertEqual(results["worker-1"]["exitCode"], 0)
        self.assertIn("stopped by reducectl", results["evaluator-0"]["result"])
        self.assertIn("stopped by reducectl", results["reducer-0"]["result"])
        with open(os.path.join(self.dir, self.job_id, "reducectl/primary-0.log")) as f:
            self.assertIn("PASSED: 0 wrong", f.read())

    def test_every_replica_sees_a_consistent_environment(self):
        out_dir = os.path.join(self.dir, "env")
        os.mkdir(out_dir)
        check = [PYTHON, ENV_CHECK, "--write", out_dir, "--expect-world", "3"]
        # The evaluator is stopped once the ranks are done: the primary waits for its report.
        evaluator_file = os.path.join(out_dir, "workerpool3-0.json")
        primary = sh(" ".join(check) + f" && while [ ! -e {evaluator_file} ]; do sleep 0.05; done")
        spec = self.write_spec([pool(1, primary), pool(2, check), pool(2, None),
                                pool(1, [PYTHON, ENV_CHECK, "--write", out_dir])])
        code, out, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        self.assertEqual(out.count("env ok:"), 4, out)
        seen = {}
        for name in os.listdir(out_dir):
            with open(os.path.join(out_dir, name)) as f:
                seen[name] = json.load(f)
        self.assertEqual(sorted(seen), ["workerpool0-0.json", "workerpool1-0.json",
                                        "workerpool1-1.json", "workerpool3-0.json"])
        ranks = sorted(v["env"]["RANK"] for v in seen.values() if "RANK" in v["env"])
        self.assertEqual(ranks, ["0", "1", "2"])
        specs = {json.dumps(v["cluster_spec"]["cluster"], sort_keys=True) for v in seen.values()}
        self.assertEqual(len(specs), 1, "every replica sees the same cluster")
        self.assertEqual(len(seen["workerpool0-0.json"]["cluster_spec"]["cluster"]["workerpool2"]),
                         2)
        for v in seen.values():
            self.assertEqual(v["env"]["CLOUD_ML_JOB_ID"], self.job_id)
            self.assertNotIn("LIBREDUCE_SECRET", v["env"])

    def test_failing_worker_fails_the_job_and_stops_everyone(self):
        spec = self.write_spec([pool(1, sh("exec sleep 302")),
                                pool(1, sh("echo 'cannot load data' >&2; exit 3")),
                                pool(1, None)])
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 1, err)
        self.assertIn("FAILED", err)
        self.assertIn("worker-0 failed (exit 3): cannot load data", err)
        rec = self.record()
        self.assertEqual(rec["state"], "JOB_STATE_FAILED")
        self.assertIn("worker-0", rec["cause"])
        self.assert_gone()

    def test_gang_restart_then_success(self):
        flag = os.path.join(self.dir, "failed-once")
        ids = os.path.join(self.dir, "comm-ids")
        worker = sh(f'echo "$LIBREDUCE_COMM_ID $TORCHELASTIC_RESTART_COUNT" >> {ids}; '
                    f'if [ -e {flag} ]; then exit 0; fi; touch {flag}; exit 5')
        # The first attempt's primary runs until the gang restart stops it; the second ends.
        primary = sh(f'echo "$LIBREDUCE_COMM_ID $TORCHELASTIC_RESTART_COUNT" >> {ids}; '
                     f'if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then exec sleep 322; fi; exit 0')
        spec = self.write_spec([pool(1, primary), pool(1, worker), pool(1, None)],
                               scheduling={"restartJobOnWorkerRestart": True, "maxRestarts": 2})
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        self.assertIn("restarting the job (restart 1 of 2)", err)
        rec = self.record()
        self.assertEqual((rec["state"], rec["attempts"], rec["restarts"]),
                         ("JOB_STATE_SUCCEEDED", 2, 1))
        with open(ids) as f:
            lines = f.read().split("\n")
        attempts = {line.split()[0] for line in lines if line}
        self.assertEqual(len(attempts), 2, "each attempt joins a fresh communicator")
        self.assertIn("1", {line.split()[1] for line in lines if line})

    def test_failed_replica_alone_is_restarted(self):
        flag = os.path.join(self.dir, "failed-once")
        done = os.path.join(self.dir, "restarted-worker-done")
        worker = sh(f'if [ -e {flag} ]; then touch {done}; exit 0; fi; touch {flag}; exit 6')
        # The primary ends once the restarted worker has (no race with the restart).
        primary = sh(f'while [ ! -e {done} ]; do sleep 0.05; done; exit 0')
        spec = self.write_spec([pool(1, primary), pool(1, worker)],
                               scheduling={"maxRestarts": 1})
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        self.assertIn("restarting worker-0 (restart 1 of 1)", err)
        rec = self.record()
        self.assertEqual(rec["attempts"], 1)
        results = {r["name"]: r for r in rec["replicas"]}
        self.assertEqual(results["worker-0"]["restarts"], 1)

    def test_restarts_run_out(self):
        spec = self.write_spec([pool(1, sh("exec sleep 303")), pool(1, sh("exit 7"))],
                               scheduling={"restartJobOnWorkerRestart": True, "maxRestarts": 1})
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 1, err)
        self.assertEqual(self.record()["attempts"], 2)
        self.assertIn("worker-0 failed (exit 7)", err)

    def test_timeout_fails_the_job(self):
        spec = self.write_spec([pool(1, sh("exec sleep 304")), pool(0, None), pool(1, None)],
                               scheduling={"timeout": "2s"})
        began = time.monotonic()
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 1, err)
        self.assertLess(time.monotonic() - began, 15)
        self.assertIn("timed out after 2 s", err)
        self.assertEqual(self.record()["state"], "JOB_STATE_FAILED")

    def cancel_with(self, sig):
        spec = self.write_spec([pool(1, sh("exec sleep 305")), pool(2, sh("exec sleep 306")),
                                pool(1, None)])
        proc = self.start(spec)
        # Wait for RUNNING before the signal: the replicas exist by then.
        lines = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            lines.append(line)
            if "RUNNING" in line or not line:
                break
        self.assertTrue(any("RUNNING" in line for line in lines), "".join(lines))
        while len(job_processes(self.job_id)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertGreaterEqual(len(job_processes(self.job_id)), 4)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 128 + sig, err)
        self.assertIn("CANCELLED", err)
        self.assertEqual(self.record()["state"], "JOB_STATE_CANCELLED")

    def test_sigint_cancels(self):
        self.cancel_with(signal.SIGINT)

    def test_sigterm_cancels(self):
        self.cancel_with(signal.SIGTERM)

    def test_sigkill_of_reducectl_leaves_nothing_behind(self):
        # A replica that starts a child of its own, in the same group, is covered as well.
        spec = self.write_spec([pool(1, sh("sleep 307 & exec sleep 308")),
                                pool(2, sh("exec sleep 309")), pool(2, None)])
        proc = self.start(spec)
        deadline = time.monotonic() + 30
        while len(job_processes(self.job_id)) < 6 and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertGreaterEqual(len(job_processes(self.job_id)), 6)
        proc.kill()
        proc.communicate(timeout=30)
        self.assert_gone()

    def test_leftover_child_of_a_finished_replica_is_stopped(self):
        spec = self.write_spec([pool(1, sh("sleep 310 & exit 0"))])
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        self.assert_gone()

    def test_killing_reducectls_whole_group_leaves_nothing_behind(self):
        # timeout(1) and a shell's kill %1 signal reducectl's process group, not only reducectl.
        spec = self.write_spec([pool(1, sh("exec sleep 315")), pool(1, sh("exec sleep 316")),
                                pool(1, None)])
        cmd = [REDUCECTL, "run", spec, "--job-id", self.job_id]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.monotonic() + 30
        while len(job_processes(self.job_id)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertGreaterEqual(len(job_processes(self.job_id)), 3)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        self.assert_gone()

    def test_process_that_left_its_group_is_stopped_at_the_end(self):
        started = os.path.join(self.dir, "left-its-group")
        spec = self.write_spec([pool(1, sh(f"setsid sh -c 'touch {started}; exec sleep 317' & "
                                           f"while [ ! -e {started} ]; do sleep 0.05; done; exit 0"))])
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        self.assert_gone()

    def test_endless_output_of_a_leftover_process_does_not_hang_reducectl(self):
        started = os.path.join(self.dir, "yes-started")
        spec = self.write_spec([pool(1, sh(f"sh -c 'touch {started}; exec yes' & "
                                           f"while [ ! -e {started} ]; do sleep 0.05; done; exit 0"))])
        code, _, err = self.run_job(spec, "--quiet", timeout=60)
        self.assertEqual(code, 0, err)
        self.assert_gone()

    def test_unread_output_does_not_stop_the_job(self):
        # reducectl's standard output is a pipe nobody reads (a stopped pager): the job still
        # runs to its timeout and ends; the lines that did not fit are only in the log.
        spec = self.write_spec([pool(1, sh("seq 200000; exec sleep 318"))],
                               scheduling={"timeout": "3s"})
        fifo = os.path.join(self.dir, "stdout")
        os.mkfifo(fifo)
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # held open, never read
        try:
            with open(fifo, "w") as out:
                proc = subprocess.Popen([REDUCECTL, "run", spec, "--job-id", self.job_id,
                                         "--stop-grace", "2"], stdout=out,
                                        stderr=subprocess.PIPE, text=True)
                err = proc.communicate(timeout=60)[1]
        finally:
            os.close(reader)
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn("timed out after 3 s", err)
        with open(os.path.join(self.dir, self.job_id, "reducectl/primary-0.log")) as f:
            self.assertEqual(f.read().count("\n"), 200000)

    def test_stop_grace_reaches_what_a_wrapper_started(self):
        # The wrapper shell dies on SIGTERM at once; its child cleans up for a second, which the
        # stop's grace (3 s here) allows. The child writes while it cleans up (and its shell
        # reports the signal of its own child on stderr): the pipes must stay open for it.
        done = os.path.join(self.dir, "cleanup-done")
        ready = os.path.join(self.dir, "trap-set")
        child = (f"trap 'sleep 0.5; echo cleaning up; sleep 0.5; echo ok > {done}; exit 0' TERM; "
                 f"echo > {ready}; while :; do sleep 0.1; done")
        spec = self.write_spec([pool(1, sh(f'sh -c "{child}"; echo wrapper-end'))])
        proc = self.start(spec)
        deadline = time.monotonic() + 30
        while not os.path.exists(ready) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertTrue(os.path.exists(ready), "the child never set its trap")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertTrue(os.path.exists(done), "the child's cleanup was cut short\n" + err)
        self.assertIn("[primary-0] cleaning up", out, err)

    # -- provisioning ---------------------------------------------------------------------

    def test_detach_then_status_and_cancel(self):
        spec = self.write_spec([pool(1, sh("exec sleep 320")), pool(1, sh("exec sleep 321")),
                                pool(1, None)])
        proc, env = self.detach(spec)
        self.assertEqual(proc.stdout.strip(), self.job_id)
        self.assertIn("started in the background", proc.stderr)
        self.assertNotIn("Slurm", proc.stderr)
        deadline = time.monotonic() + 60
        while True:
            status = subprocess.run([REDUCECTL, "status", self.job_id], capture_output=True,
                                    text=True, env=env)
            self.assertEqual(status.returncode, 0, status.stderr)
            if f"job {self.job_id}: RUNNING" in status.stdout or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertIn(f"job {self.job_id}: RUNNING", status.stdout)
        self.assertIn("backend: local", status.stdout)
        cancel = subprocess.run([REDUCECTL, "cancel", self.job_id], capture_output=True,
                                text=True, env=env, timeout=60)
        self.assertEqual(cancel.returncode, 0, cancel.stderr)
        self.assertIn(f"job {self.job_id}: CANCELLED", cancel.stdout)
        self.assertEqual(self.record()["state"], "JOB_STATE_CANCELLED")
        self.assert_gone()
        unknown = subprocess.run([REDUCECTL, "status", "no-such-job"], capture_output=True,
                                 text=True, env=env)
        self.assertEqual(unknown.returncode, 2)
        self.assertIn("no job 'no-such-job'", unknown.stderr)

    def test_status_shows_the_reducers_and_ranks_figures(self):
        """While a job runs, status reads each built-in reducer's metrics endpoint (what it
        served so far, and its memory) and each rank's metrics textfile, which reducectl gave it
        a directory for; once the job ended, no reducer is scraped, and the ranks' last files
        tell what they did: both ran the same collectives, none failed."""
        release = os.path.join(self.dir, "release")
        demo = " ".join([DEMO, "--max-bytes", "256K", "--iters", "2", "--warmup", "0"])
        stay = f"{demo} && while [ ! -e {release} ]; do sleep 0.05; done"
        spec = self.write_spec([pool(1, sh(stay)), pool(1, sh(stay)), pool(2, None)])
        _, env = self.detach(spec)
        figures = re.compile(r"reducer-(\d): (\d+) operations served, 0 failed; .* received, "
                             r".* sent; .*; memory .* of 1\.0 GiB")
        ranks = re.compile(r"(primary-0|worker-0): (\d+) collective\(s\) done, 0 failed; most "
                           r"time in [A-Za-z]+ of \d+B?-?\d*[KMG]?B over \w+: \d+ at [0-9.]+ "
                           r"[mu]?s mean, [0-9.]+ GB/s \(written \d+ s ago\)")

        def status():
            done = subprocess.run([REDUCECTL, "status", self.job_id], capture_output=True,
                                  text=True, env=env, timeout=60)
            self.assertEqual(done.returncode, 0, done.stderr)
            return done.stdout

        def done_by_rank(text):
            return {m.group(1): int(m.group(2)) for m in ranks.finditer(text)}

        served, text = {}, ""
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not (
                len(served) == 2 and all(n > 0 for n in served.values())
                and len(done_by_rank(text)) == 2):
            text = status()
            served = {m.group(1): int(m.group(2)) for m in figures.finditer(text)}
            time.sleep(0.1)
        self.assertEqual(sorted(served), ["0", "1"], text)
        self.assertTrue(all(n > 0 for n in served.values()), text)
        self.assertEqual(sorted(done_by_rank(text)), ["primary-0", "worker-0"], text)
        with open(release, "w"):
            pass
        deadline = time.monotonic() + 90
        while f"job {self.job_id}: SUCCEEDED" not in text and time.monotonic() < deadline:
            text = status()
            time.sleep(0.1)
        self.assertIn(f"job {self.job_id}: SUCCEEDED", text)
        self.assertNotIn("operations served", text)
        final = done_by_rank(text)
        self.assertEqual(sorted(final), ["primary-0", "worker-0"], text)
        self.assertGreater(final["primary-0"], 0, text)
        self.assertEqual(final["primary-0"], final["worker-0"], text)

    def test_status_after_reducectl_is_killed(self):
        """A detached job whose reducectl dies by SIGKILL: status says FAILED and why, not the
        RUNNING it had recorded, and cancel says the job has ended."""
        spec = self.write_spec([pool(1, sh("exec sleep 330")), pool(1, sh("exec sleep 331")),
                                pool(1, None)])
        _, env = self.detach(spec)
        status_file = os.path.join(self.dir, self.job_id, "reducectl", "status")

        def recorded():
            with open(status_file) as f:
                return f.read()

        deadline = time.monotonic() + 60
        while "state=RUNNING" not in recorded():
            self.assertLess(time.monotonic(), deadline, recorded())
            time.sleep(0.05)
        fields = dict(line.split("=", 1) for line in recorded().splitlines())
        driver = int(fields["driver_pid"])
        os.kill(driver, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while process_alive(driver):
            self.assertLess(time.monotonic(), deadline, "the killed reducectl is still there")
            time.sleep(0.05)
        status = subprocess.run([REDUCECTL, "status", self.job_id], capture_output=True,
                                text=True, env=env, timeout=30)
        self.assertEqual(status.returncode, 0, status.stderr)
        self.assertIn(f"job {self.job_id}: FAILED", status.stdout)
        self.assertIn(f"the reducectl that ran it (pid {driver}) ended", status.stdout)
        self.assertNotIn("RUNNING\n", status.stdout)
        cancel = subprocess.run([REDUCECTL, "cancel", self.job_id], capture_output=True,
                                text=True, env=env, timeout=30)
        self.assertEqual(cancel.returncode, 0, cancel.stderr)
        self.assertIn("had already ended: FAILED", cancel.stdout)
        self.assert_gone()

    def test_reducer_never_ready_fails_clearly(self):
        spec = self.write_spec([pool(1, sh("exec sleep 311")), pool(0, None),
                                pool(2, sh("exec sleep 312"))])
        code, _, err = self.run_job(spec, "--ready-timeout", "2")
        self.assertEqual(code, 1, err)
        self.assertIn("reducer-0 not ready after 2 s", err)
        results = {r["name"]: r for r in self.record()["replicas"]}
        self.assertEqual(results["primary-0"]["result"], "not started")

    def test_reducer_that_exits_before_ready_is_named(self):
        spec = self.write_spec([pool(1, sh("exit 0")), pool(0, None),
                                pool(1, sh("echo 'port in use' >&2; exit 4"))])
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 1, err)
        self.assertIn("reducer-0 exited before it was ready (exit 4: port in use)", err)

    def test_missing_program_is_reported(self):
        spec = self.write_spec([pool(1, [os.path.join(self.dir, "no-such-program")])])
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 1, err)
        self.assertIn("cannot run", err)
        self.assertIn("No such file or directory", err)

    # -- emulated NICs (root) -------------------------------------------------------------

    def emulated_prefix(self, stderr_text):
        match = re.search(r"in its own namespace \((rdj[0-9a-f]+)-\*\)", stderr_text)
        self.assertIsNotNone(match, stderr_text)
        return match.group(1)

    def namespaces(self, prefix):
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        return [line.split()[0] for line in out.splitlines() if line.startswith(prefix + "-")]

    def test_emulated_network_caps_each_nic(self):
        if not can_make_namespaces():
            self.skipTest("needs root and ip(8) to create network namespaces")
        if not os.path.exists(os.path.join(BUILD, "bench/rd_perf")):
            self.skipTest("rd_perf is not built here (benchmarks off)")
        # 2 ranks, 2 reducers, 100 Mbit/s NICs (12.5 MB/s): rd_perf's algbw must stay under it.
        perf = [os.path.join(BUILD, "bench/rd_perf"), "-b", "4M", "-e", "4M", "-n", "2", "-w", "1"]
        nic = {"nicGbps": 0.1}
        spec = self.write_spec([pool(1, perf, resources=nic), pool(1, perf, resources=nic),
                                pool(2, None, resources=nic)])
        code, out, err = self.run_job(spec, "--emulate-network")
        self.assertEqual(code, 0, err)
        prefix = self.emulated_prefix(err)
        rows = [line.split() for line in out.splitlines()
                if line.startswith("[primary-0]") and "float32" in line]
        self.assertEqual(len(rows), 1, out)
        algbw_gbs = float(rows[0][7])  # out-of-place algbw, GB/s
        self.assertGreater(algbw_gbs, 0)
        self.assertLess(algbw_gbs, 0.0125 * 1.1, "a 100 Mbit/s NIC cannot carry more")
        with open(os.path.join(self.dir, self.job_id, "reducectl/primary-0.log")) as f:
            self.assertIn("Out of bounds values : 0 OK", f.read())
        self.assertEqual(self.namespaces(prefix), [])

    def test_emulated_network_is_removed_when_reducectl_is_killed(self):
        if not can_make_namespaces():
            self.skipTest("needs root and ip(8) to create network namespaces")
        spec = self.write_spec([pool(1, sh("exec sleep 313"), resources={"nicGbps": 1}),
                                pool(0, None), pool(1, None)])
        proc = self.start(spec, "--emulate-network")
        text = ""
        deadline = time.monotonic() + 30
        while "RUNNING" not in text and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            text += line
        prefix = self.emulated_prefix(text)
        self.assertGreater(len(self.namespaces(prefix)), 0)
        proc.kill()
        proc.communicate(timeout=30)
        self.assert_gone()
        deadline = time.monotonic() + 20
        while self.namespaces(prefix) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.namespaces(prefix), [])

    # -- the other commands ---------------------------------------------------------------

    def test_bad_spec_is_refused_before_anything_starts(self):
        path = os.path.join(self.dir, "bad.yaml")
        with open(path, "w") as f:
            f.write("displayName: x\nworkerPoolSpecs:\n  - replicaCount: 1\n    comand: [true]\n")
        for command in ("run", "validate"):
            proc = subprocess.run([REDUCECTL, command, path], capture_output=True, text=True,
                                  timeout=30)
            self.assertEqual(proc.returncode, 2, proc.stderr)
            self.assertIn("bad.yaml:4:5", proc.stderr)
            self.assertIn("did you mean 'command'", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "x")))

    def test_quickstart_example_runs(self):
        """The README's first job, as written, run from another directory: its relative paths
        are the spec file's (the checkout's build/), not the caller's."""
        if not os.path.exists(os.path.join(SOURCE, "build/examples/allreduce_demo")):
            self.skipTest("the quickstart names build/ of the checkout, not built here")
        example = os.path.join(SOURCE, "examples/jobs/quickstart.yaml")
        proc = subprocess.run([REDUCECTL, "run", example, "--job-id", self.job_id],
                              cwd=self.dir, capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("[primary-0] PASSED: 0 wrong", proc.stdout)
        self.assertIn("[primary-0]   algorithm   auto (per size", proc.stdout)
        self.assertIn(f"job {self.job_id} SUCCEEDED", proc.stderr)
        job_dir = os.path.join(SOURCE, "build/reducectl-jobs", self.job_id)
        self.assertTrue(os.path.isdir(job_dir), "the job's files are not beside the spec's build/")
        self.assertEqual(os.listdir(self.dir), [], "the run wrote into the caller's directory")
        shutil.rmtree(job_dir)

    def test_validate_and_plan_describe_the_example(self):
        example = os.path.join(SOURCE, "examples/jobs/quickstart.yaml")
        proc = subprocess.run([REDUCECTL, "validate", example], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("valid for the local backend", proc.stdout)
        # From another directory: the spec's relative paths are the spec file's.
        proc = subprocess.run([REDUCECTL, "validate", "--backend", "slurm", example],
                              capture_output=True, text=True, cwd=self.dir)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("valid for the slurm backend", proc.stdout)
        # What only a backend refuses is refused by validate --backend, with the same words.
        tpu = self.write_spec([dict(pool(1, ["a"]), machineSpec={
            "machineType": "n1-standard-8", "acceleratorType": "TPU_V3", "acceleratorCount": 8})])
        local = subprocess.run([REDUCECTL, "validate", tpu], capture_output=True, text=True)
        self.assertEqual(local.returncode, 0, local.stderr)
        for backend in ("slurm", "kubernetes"):
            proc = subprocess.run([REDUCECTL, "validate", "--backend", backend, tpu],
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 2, proc.stdout)
            self.assertIn("acceleratorType TPU_V3 is a TPU", proc.stderr)
        typo = self.write_spec([dict(pool(1, ["a"]), machineSpec={"machineType": "n1-standrd-8"})])
        proc = subprocess.run([REDUCECTL, "validate", typo], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2, proc.stdout)
        self.assertIn("(did you mean n1-standard-8?)", proc.stderr)
        proc = subprocess.run([REDUCECTL, "plan", "--workers", "8", "--worker-gbps", "100",
                               "--reducer-gbps", "100", "--reducers", "4"],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("warning", proc.stdout)
        self.assertIn("8", proc.stdout)
        # With a bucket: each algorithm's time; as JSON for scripts; bad values named.
        base = [REDUCECTL, "plan", "--workers", "8", "--worker-gbps", "1"]
        proc = subprocess.run(base + ["--bucket", "25M"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("rs through the reducers:", proc.stdout)
        self.assertIn("core per Gbit/s", proc.stdout)
        proc = subprocess.run(base + ["--bucket", "25M", "--json"], capture_output=True, text=True)
        predicted = json.loads(proc.stdout)
        self.assertLess(predicted["rs"]["seconds"], predicted["ring"]["seconds"])
        for bad, words in ((["--bucket", "0"], "--bucket must be a size above 0"),
                           (["--bucket", "lots"], "--bucket must be a size above 0"),
                           (["--json"], "need --bucket SIZE"),
                           (["--bucket", "4K", "--loopback"], "--loopback needs --one-host"),
                           (["--bucket", "4K", "--one-host", "0"], "--one-host must be")):
            proc = subprocess.run(base + bad, capture_output=True, text=True)
            self.assertEqual(proc.returncode, 2, bad)
            self.assertIn(words, proc.stderr, bad)


# Skips that nothing scripts/setup.sh installs could undo: the kernel or sandbox will not run a
# container, or this build is configured without the part (the sanitizer builds leave out the
# benchmarks and the Python package). In CI (CI=true) any other skip is a failure.
ENVIRONMENTAL_SKIPS = ("cannot run a container here", "not built here", "built without")


def main():
    """unittest.main, but exit 77 when every test that ran was skipped: CTest's "skipped"; in CI,
    exit 1 for a skip of something setup installs."""
    outcome = unittest.main(exit=False).result
    causes = collections.Counter(reason for _, reason in outcome.skipped)
    for reason, count in causes.items():
        print(f"skipped {count}: {reason}", file=sys.stderr)
    if not outcome.wasSuccessful():
        sys.exit(1)
    if os.environ.get("CI") == "true" and any(
            not any(marker in reason for marker in ENVIRONMENTAL_SKIPS) for reason in causes):
        print("skipped in CI, where scripts/setup.sh provides what it needs", file=sys.stderr)
        sys.exit(1)
    sys.exit(77 if outcome.testsRun and len(outcome.skipped) == outcome.testsRun else 0)


if __name__ == "__main__":
    main()  # skipped: no root for namespaces
