# SPDX-License-Identifier: BSD-3-Clause
"""Whole jobs through `reducectl run --backend slurm` on a real Slurm: slurmctld and four slurmd
on this host (scripts/local_slurm.sh, started and stopped by CTest's fixture), real sbatch /
srun / squeue / scancel, real reduce-server and replica processes.

Every test checks at its end that its Slurm job left the queue and that no process of the job
is left (every replica carries CLOUD_ML_JOB_ID=<the job's id>). Where the local Slurm could not be
started (not root, no packages), each test is skipped with the reason.
"""

import glob
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

from test_reducectl_jobs import (BUILD, DEMO, ENV_CHECK, PYTHON, REDUCECTL, SOURCE,
                                 kill_leftovers, main, pool, write_job_spec, sh)

sys.path.insert(0, os.path.join(SOURCE, "bench", "failover"))
from readmission import reducer_pids  # noqa: E402  (the one finder of a job's reducers)
from test_reducectl_shared_pool import SharedPool  # noqa: E402

LOCAL_SLURM = os.path.join(SOURCE, "scripts/local_slurm.sh")


def slurm_is_up():
    if not os.environ.get("SLURM_CONF"):
        return False
    return subprocess.run([LOCAL_SLURM, "status"], capture_output=True).returncode == 0


def squeue_ids():
    out = subprocess.run(["squeue", "-h", "-o", "%A"], capture_output=True, text=True).stdout
    return set(out.split())


class SlurmTests(unittest.TestCase):
    def setUp(self):
        if not slurm_is_up():
            self.skipTest("no local Slurm: scripts/local_slurm.sh start did not bring one up "
                          "(it needs root and apt-get or the slurm-wlm and munge packages)")
        self.tmp = tempfile.TemporaryDirectory(prefix="reducectl-slurm-")
        self.dir = self.tmp.name
        self.job_id = "s" + uuid.uuid4().hex[:12]
        self.state = os.path.join(self.dir, "state")  # the job registry of this test
        self.job_dir = os.path.join(self.dir, self.job_id)

    def tearDown(self):
        leftover = kill_leftovers(self.job_id, grace=10)
        ids = self.slurm_ids()
        queued = sorted(squeue_ids() & set(ids))
        for slurm_id in queued:
            subprocess.run(["scancel", slurm_id])
        self.tmp.cleanup()
        self.assertEqual(leftover, [], "processes of the job outlived it")
        self.assertEqual(queued, [], "the job's Slurm jobs are still in the queue")

    def slurm_ids(self):
        try:
            with open(os.path.join(self.job_dir, "reducectl/job.json")) as f:
                return json.load(f).get("slurmJobIds", "").split(",")
        except (OSError, ValueError):
            status = os.path.join(self.job_dir, "reducectl/status")
            if not os.path.exists(status):
                return []
            with open(status) as f:
                return [line[10:].strip() for line in f if line.startswith("slurm_job=")]

    def write_spec(self, pools, **top):
        return write_job_spec(self.dir, "slurmtest", pools, **top)

    def command(self, *args):
        return [REDUCECTL, *args]

    def env(self):
        return dict(os.environ, XDG_STATE_HOME=self.state)

    def start(self, spec_path, *flags):
        cmd = self.command("run", spec_path, "--backend", "slurm", "--job-id", self.job_id,
                           *flags)
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.env())

    def run_job(self, spec_path, *flags, timeout=150):
        proc = self.start(spec_path, *flags)
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err

    def record(self):
        with open(os.path.join(self.job_dir, "reducectl/job.json")) as f:
            return json.load(f)

    def log(self, name):
        with open(os.path.join(self.job_dir, "reducectl", name + ".log")) as f:
            return f.read()

    def wait_for_state(self, want, timeout=60):
        path = os.path.join(self.job_dir, "reducectl/status")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with open(path) as f:
                    if f"state={want}\n" in f.read():
                        return
            except OSError:
                pass
            time.sleep(0.1)
        self.fail(f"the job did not reach {want} within {timeout} s")

    # -- outcomes -------------------------------------------------------------------------

    def test_quickstart_through_slurm(self):
        demo = [DEMO, "--max-bytes", "1M", "--iters", "2", "--warmup", "1"]
        spec = self.write_spec([pool(1, demo),
                                pool(4, demo, slurm={"nodes": 2, "tasksPerNode": 2}),
                                pool(3, None, slurm={"nodes": 3})])
        code, out, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        self.assertIn("[primary-0] PASSED: 0 wrong", out)
        self.assertIn(f"job {self.job_id} SUCCEEDED", err)
        self.assertIn("PASSED: 0 wrong", self.log("primary-0"))
        self.assertRegex(self.log("primary-0"), r"workers +5\n")
        rec = self.record()
        self.assertEqual(rec["state"], "JOB_STATE_SUCCEEDED")
        self.assertTrue(rec["slurmJobIds"])
        for r in rec["replicas"]:
            if r["pool"] in (0, 1):
                self.assertEqual(r["exitCode"], 0, r)

    def test_a_job_attached_to_a_shared_pool(self):
        shared = SharedPool(self.dir)
        try:
            demo = [DEMO, "--max-bytes", "256K", "--iters", "2", "--warmup", "0"]
            spec = self.write_spec(
                [pool(1, demo), pool(2, demo, slurm={"nodes": 2})],
                reducerPool={"addresses": [shared.address], "commId": "slurm-team",
                             "keyFile": shared.key("slurm-team", "team.key")})
            code, out, err = self.run_job(spec)
        finally:
            shared.stop()
        self.assertEqual(code, 0, err)
        self.assertIn("[primary-0] PASSED: 0 wrong", out)
        self.assertEqual([r for r in self.record()["replicas"] if r["pool"] == 2], [])

    def test_every_replica_sees_a_consistent_environment(self):
        out_dir = os.path.join(self.dir, "env")
        os.mkdir(out_dir)
        check = [PYTHON, ENV_CHECK, "--write", out_dir, "--expect-world", "5"]
        evaluator_file = os.path.join(out_dir, "workerpool3-0.json")
        primary = sh(" ".join(check) + f" && while [ ! -e {evaluator_file} ]; do sleep 0.05; done")
        spec = self.write_spec([pool(1, primary),
                                pool(4, check, slurm={"nodes": 2, "tasksPerNode": 2}),
                                pool(2, None), pool(1, [PYTHON, ENV_CHECK, "--write", out_dir])])
        code, out, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        self.assertEqual(out.count("env ok:"), 6, out + err)
        seen = {}
        for name in os.listdir(out_dir):
            with open(os.path.join(out_dir, name)) as f:
                seen[name] = json.load(f)
        self.assertEqual(len(seen), 6, sorted(seen))
        ranks = sorted(int(v["env"]["RANK"]) for v in seen.values() if "RANK" in v["env"])
        self.assertEqual(ranks, [0, 1, 2, 3, 4])
        specs = {json.dumps(v["cluster_spec"]["cluster"], sort_keys=True) for v in seen.values()}
        self.assertEqual(len(specs), 1, "every replica sees the same cluster")
        cluster = seen["workerpool0-0.json"]["cluster_spec"]["cluster"]
        host = os.uname().nodename
        for address in cluster["workerpool1"] + cluster["workerpool0"]:
            self.assertTrue(address.startswith(host + ":"), address)  # real host names
        self.assertEqual(len(set(cluster["workerpool1"])), 4, "each replica its own port")
        workers = [v for v in seen.values() if v["type"] == "workerpool1"]
        self.assertEqual(sorted(v["env"]["NODE_RANK"] for v in workers), ["1", "1", "2", "2"])
        self.assertEqual(sorted(v["env"]["LOCAL_RANK"] for v in workers), ["0", "0", "1", "1"])
        self.assertEqual({v["env"]["LOCAL_WORLD_SIZE"] for v in workers}, {"2"})
        for v in seen.values():
            self.assertEqual(v["env"]["CLOUD_ML_JOB_ID"], self.job_id)
            self.assertNotIn("LIBREDUCE_SECRET", v["env"])
            self.assertTrue(v["env"]["LIBREDUCE_COMM_ID"].endswith("-attempt0")
                            if "LIBREDUCE_COMM_ID" in v["env"] else True)

    def test_failing_worker_fails_the_job(self):
        spec = self.write_spec([pool(1, sh("exec sleep 311")),
                                pool(2, sh('if [ "$RANK" = 2 ]; then echo "cannot load data" >&2; '
                                           'exit 3; fi; exec sleep 312')),
                                pool(1, None)])
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 1, err)
        self.assertIn("FAILED", err)
        self.assertIn("worker-1 failed (exit 3): cannot load data", err)
        rec = self.record()
        self.assertEqual(rec["state"], "JOB_STATE_FAILED")
        self.assertIn("worker-1", rec["cause"])

    def test_sigint_cancels_with_scancel(self):
        spec = self.write_spec([pool(1, sh("exec sleep 313")), pool(1, sh("exec sleep 314")),
                                pool(1, None)])
        proc = self.start(spec)
        self.wait_for_state("RUNNING")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 128 + signal.SIGINT, err)
        self.assertIn("cancelled by SIGINT; cancelling Slurm job", err)
        self.assertEqual(self.record()["state"], "JOB_STATE_CANCELLED")

    def test_timeout_fails_the_job(self):
        spec = self.write_spec([pool(1, sh("exec sleep 315")), pool(0, None), pool(1, None)],
                               scheduling={"timeout": "4s"})
        began = time.monotonic()
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 1, err)
        self.assertLess(time.monotonic() - began, 60)
        self.assertIn("timed out after 4 s", err)
        self.assertEqual(self.record()["state"], "JOB_STATE_FAILED")

    def test_reducer_never_ready_fails_clearly(self):
        spec = self.write_spec([pool(1, sh("exec sleep 316")), pool(0, None),
                                pool(1, sh("exec sleep 317"))])
        code, _, err = self.run_job(spec, "--ready-timeout", "3")
        self.assertEqual(code, 1, err)
        self.assertIn("reducer-0 not ready after 3 s", err)

    def test_restart_succeeds_on_attempt_two(self):
        flag = os.path.join(self.dir, "failed-once")
        ids = os.path.join(self.dir, "comm-ids")
        worker = sh(f'echo "$LIBREDUCE_COMM_ID" >> {ids}; '
                    f'if [ -e {flag} ]; then exit 0; fi; touch {flag}; exit 5')
        # The first attempt's primary runs until the restart stops it; the second ends.
        primary = sh('if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then exec sleep 323; fi; exit 0')
        spec = self.write_spec([pool(1, primary), pool(1, worker), pool(1, None)],
                               scheduling={"restartJobOnWorkerRestart": True, "maxRestarts": 2})
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        self.assertIn("restarting the job as a new Slurm job (restart 1 of 2)", err)
        rec = self.record()
        self.assertEqual((rec["state"], rec["attempts"], rec["restarts"]),
                         ("JOB_STATE_SUCCEEDED", 2, 1))
        self.assertEqual(len(rec["slurmJobIds"].split(",")), 2)
        with open(ids) as f:
            self.assertEqual(len(set(f.read().split())), 2, "each attempt a fresh communicator")

    def test_lost_reducer_is_replaced_and_the_job_goes_on(self):
        # docs/failover.md: reducer-1 SIGKILLed mid-job; its wrapper starts a replacement at the
        # same address, the ranks re-admit it, and the attempt goes on.
        check = [os.path.join(BUILD, "tests/rd_worker_check"), "--colls", "allreduce",
                 "--counts", "262144", "--dtypes", "float32", "--ops", "sum", "--iters", "150",
                 "--announce-after", "30"]
        spec = self.write_spec([pool(1, check), pool(1, check), pool(3, None)],
                               libreduce={"heartbeat_ms": 1000})
        proc = self.start(spec)
        out, killed = [], False
        deadline = time.monotonic() + 150
        with proc.stdout, proc.stderr:
            for line in proc.stdout:
                out.append(line)
                if not killed and "30 operations done" in line:
                    os.kill(reducer_pids(self.job_id)[1], signal.SIGKILL)
                    killed = True
                self.assertLess(time.monotonic(), deadline, "".join(out))
            err = proc.stderr.read()
        proc.wait(timeout=60)
        self.assertTrue(killed, "".join(out))
        self.assertEqual(proc.returncode, 0, "".join(out) + err)
        self.assertEqual("".join(out).count("300 checks, 0 failed"), 2, "".join(out))
        rec = self.record()
        self.assertEqual((rec["state"], rec["attempts"]), ("JOB_STATE_SUCCEEDED", 1))
        [failover] = rec["failovers"]
        self.assertRegex(failover["reducer"], r"^reducer-[0-2]$")  # srun starts them in any order
        self.assertEqual(failover["cause"], "killed by SIGKILL")
        # What the loss cost, from rank 0's events: a kill is seen when the connection breaks,
        # so the rank had heard from the reducer within the heartbeat period (1000 ms) before.
        self.assertTrue(0 <= failover["silentMs"] < 1000, failover)
        self.assertGreaterEqual(failover["stalledMs"], 0, failover)
        self.assertEqual(failover["timeLostMs"], failover["silentMs"] + failover["stalledMs"], failover)
        self.assertIn("starting a replacement at " + failover["address"],
                      self.log(failover["reducer"]))

    def test_detach_then_status_and_cancel(self):
        spec = self.write_spec([pool(1, sh("exec sleep 318")), pool(1, sh("exec sleep 319")),
                                pool(1, None)])
        proc = subprocess.run(self.command("run", spec, "--backend", "slurm", "--detach",
                                           "--job-id", self.job_id),
                              capture_output=True, text=True, timeout=60, env=self.env())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.strip(), self.job_id)
        self.assertRegex(proc.stderr, r"started in the background \(Slurm job \d+\)")
        self.wait_for_state("RUNNING")
        status = subprocess.run(self.command("status", self.job_id), capture_output=True,
                                text=True, env=self.env())
        self.assertEqual(status.returncode, 0, status.stderr)
        self.assertIn(f"job {self.job_id}: RUNNING", status.stdout)
        self.assertRegex(status.stdout, r"backend: slurm \(Slurm job \d+: RUNNING\)")
        cancel = subprocess.run(self.command("cancel", self.job_id), capture_output=True,
                                text=True, env=self.env(), timeout=150)
        self.assertEqual(cancel.returncode, 0, cancel.stderr)
        self.assertIn(f"job {self.job_id}: CANCELLED", cancel.stdout)
        self.assertEqual(self.record()["state"], "JOB_STATE_CANCELLED")
        status = subprocess.run(self.command("status", self.job_id), capture_output=True,
                                text=True, env=self.env())
        self.assertIn(f"job {self.job_id}: CANCELLED", status.stdout)

    def test_unsatisfiable_spec_is_refused(self):
        spec = self.write_spec([pool(1, sh("exit 0")),
                                pool(64, sh("exit 0"), slurm={"nodes": 64}), pool(1, None)])
        began = time.monotonic()
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 1, err)
        self.assertLess(time.monotonic() - began, 30)
        # The test cluster enforces partition limits at submission (EnforcePartLimits=ALL);
        # elsewhere the job is cancelled at its first hopeless pending reason.
        self.assertIn("sbatch refused the job: sbatch: error: Batch job submission failed: "
                      "Node count specification invalid", err)

    def test_render_prints_the_script_it_submits(self):
        spec = self.write_spec([pool(1, sh("exit 0")), pool(2, sh("exit 0")), pool(1, None)],
                               slurm={"partition": "debug"})
        proc = subprocess.run(self.command("render", "--backend", "slurm", spec,
                                           "--job-id", self.job_id),
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("#SBATCH hetjob", proc.stdout)
        self.assertIn("#SBATCH --partition=debug", proc.stdout)
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        script = os.path.join(self.job_dir, "reducectl/slurm/attempt-1.sbatch")
        with open(script) as f:
            self.assertEqual(f.read(), proc.stdout)

    def test_ddp_example_through_slurm(self):
        if not glob.glob(os.path.join(BUILD, "python/libreduce/_torch*.so")):
            self.skipTest("built without the torch backend (libreduce/_torch*.so)")
        if importlib.util.find_spec("torch") is None:
            self.skipTest("torch is not installed")
        os.symlink(os.path.abspath(BUILD), os.path.join(self.dir, "build"))
        os.symlink(os.path.join(os.path.abspath(SOURCE), "examples"),
                   os.path.join(self.dir, "examples"))
        example = os.path.join(SOURCE, "examples/jobs/pytorch_ddp.yaml")
        self.job_dir = os.path.join(BUILD, "reducectl-jobs", self.job_id)
        proc = subprocess.run(self.command("run", example, "--backend", "slurm",
                                           "--job-id", self.job_id),
                              cwd=self.dir, capture_output=True, text=True, timeout=600,
                              env=self.env())
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        self.assertIn("training on 4 ranks, backend libreduce", proc.stdout)
        found = re.search(r"final test accuracy ([0-9.]+)", proc.stdout)
        self.assertTrue(found and float(found.group(1)) >= 0.8, proc.stdout[-2000:])


if __name__ == "__main__":
    main()
