# SPDX-License-Identifier: BSD-3-Clause
"""Tuning jobs through `reducectl tune`: real reducectl, each trial a real local job.

The trial program is tune_trial.py (its docstring says what it does on request). At the end of
every test no process of the tuning job may be left: every replica carries
CLOUD_ML_JOB_ID=<the tuning job's id>. Paths come from the environment CTest sets: REDUCECTL,
RD_BUILD_DIR, RD_SOURCE_DIR.
"""

import json
import os
import signal
import subprocess
import tempfile
import time
import unittest
import uuid

from test_reducectl_jobs import BUILD, PYTHON, REDUCECTL, SOURCE, job_processes, kill_leftovers, main

HERE = os.path.dirname(os.path.abspath(__file__))
TRIAL = [PYTHON, os.path.join(HERE, "tune_trial.py")]


def integer(name, lo, hi):
    return {"parameterId": name, "integerValueSpec": {"minValue": lo, "maxValue": hi}}


class TuningTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="reducectl-tune-")
        self.dir = self.tmp.name
        self.job_id = "tune" + uuid.uuid4().hex[:10]
        self.log = os.path.join(self.dir, "trials.log")

    def tearDown(self):
        leftover = kill_leftovers(self.job_id, grace=10)
        self.tmp.cleanup()
        self.assertEqual(leftover, [], "processes of the tuning job outlived reducectl")

    def write_spec(self, parameters, env=None, ranks=1, reducers=0, study=None, **top):
        env = [{"name": k, "value": v} for k, v in (env or {}).items()]
        env.append({"name": "TRIAL_LOG", "value": self.log})
        pools = [{"replicaCount": 1, "command": TRIAL, "env": env}]
        if ranks > 1 or reducers:
            pools.append({"replicaCount": ranks - 1, "command": TRIAL, "env": env} if ranks > 1
                         else {})
        if reducers:
            pools.append({"replicaCount": reducers})
        spec = {"displayName": "tune-test", "baseOutputDirectory": self.dir,
                "maxTrialCount": 4, "parallelTrialCount": 1,
                "studySpec": {"metrics": [{"metricId": "score", "goal": "MAXIMIZE"}],
                              "parameters": parameters, **(study or {})},
                "trialJobSpec": {"workerPoolSpecs": pools,
                                 "scheduling": {"timeout": "120s"}}}
        spec.update(top)
        path = os.path.join(self.dir, "tune.json")
        with open(path, "w") as f:
            json.dump(spec, f)
        return path

    def start(self, *args):
        env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
        return subprocess.Popen([REDUCECTL, "tune", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)

    def tune(self, spec, *flags, timeout=150):
        proc = self.start(spec, "--job-id", self.job_id, "--stop-grace", "3", *flags)
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err

    def record(self):
        with open(os.path.join(self.dir, self.job_id, "trials.json")) as f:
            return json.load(f)

    def wait_for(self, condition, seconds=60):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if condition():
                    return True
            except (OSError, ValueError, KeyError):
                pass  # trials.json is replaced atomically, but may not exist yet
            time.sleep(0.1)
        return False

    def values(self, trial):
        return {p["parameterId"]: p["value"] for p in trial["parameters"]}

    def max_concurrency(self):
        running, peak = 0, 0
        with open(self.log) as f:
            events = sorted((float(t), kind) for kind, _, t in (line.split() for line in f))
        for _, kind in events:
            running += 1 if kind == "start" else -1
            peak = max(peak, running)
        return peak

    # -- the search -------------------------------------------------------------------------

    def test_grid_covers_every_point_once_within_the_parallel_limit(self):
        params = [integer("x", 1, 3),
                  {"parameterId": "opt", "categoricalValueSpec": {"values": ["a", "b"]},
                   "conditionalParameterSpecs": [{
                       "parentCategoricalValues": {"values": ["a"]},
                       "parameterSpec": {"parameterId": "z",
                                         "discreteValueSpec": {"values": [5, 6]}}}]}]
        spec = self.write_spec(params, study={"algorithm": "GRID_SEARCH"}, maxTrialCount=20,
                               parallelTrialCount=3)
        code, out, err = self.tune(spec)
        self.assertEqual(code, 0, out + err)
        trials = self.record()["trials"]
        points = [tuple(sorted(self.values(t).items())) for t in trials]
        self.assertEqual(len(points), 9, out)  # x: 3 values; opt=a with z: 2, opt=b: 1
        self.assertEqual(len(set(points)), 9, "a grid point was tried twice")
        for t in trials:
            v = self.values(t)
            self.assertEqual("z" in v, v["opt"] == "a", v)  # the child only when active
            self.assertEqual(t["state"], "SUCCEEDED", t)
        self.assertIn("every point of the search space was tried", out)
        self.assertLessEqual(self.max_concurrency(), 3)
        self.assertIn("best: trial", out)
        best = self.record()["bestTrialId"]
        self.assertEqual(self.values(trials[int(best) - 1])["x"], 2)

    @unittest.skipUnless(os.path.isdir(os.path.join(BUILD, "python", "libreduce")),
                         "the Python package is not built here (a sanitizer build)")
    def test_trials_are_jobs_with_reducers_and_report_through_libreduce(self):
        spec = self.write_spec([integer("x", 0, 4), integer("y", 0, 4)],
                               env={"USE_LIBREDUCE": "1"}, ranks=2, reducers=1,
                               maxTrialCount=3, parallelTrialCount=2)
        code, out, err = self.tune(spec)
        self.assertEqual(code, 0, out + err)
        rec = self.record()
        self.assertEqual(rec["state"], "SUCCEEDED")
        self.assertEqual(len(rec["trials"]), 3)
        for t in rec["trials"]:
            self.assertEqual(t["state"], "SUCCEEDED", t)
            v = self.values(t)
            want = -(v["x"] - 2) ** 2 - (v["y"] - 2) ** 2
            self.assertEqual(t["finalMeasurement"]["metrics"],
                             [{"metricId": "score", "value": want}])
            job_dir = os.path.join(self.dir, self.job_id, t["id"])
            self.assertEqual(t["jobDirectory"], job_dir)
            self.assertTrue(os.path.isdir(os.path.join(job_dir, "model")))
            with open(os.path.join(job_dir, "hypertune/output.metrics")) as f:
                self.assertEqual(json.loads(f.readline())["trial"], t["id"])
            with open(os.path.join(job_dir, "reducectl/job.json")) as f:
                self.assertEqual(json.load(f)["state"], "JOB_STATE_SUCCEEDED")

    # -- trials that go wrong ------------------------------------------------------------

    def test_failed_and_infeasible_trials_are_recorded(self):
        spec = self.write_spec([integer("x", 1, 3)],
                               env={"FAIL_WHEN": "x=1", "SILENT_WHEN": "x=2"},
                               study={"algorithm": "GRID_SEARCH"}, maxTrialCount=3)
        code, out, err = self.tune(spec)
        self.assertEqual(code, 0, out + err)
        states = {self.values(t)["x"]: t for t in self.record()["trials"]}
        self.assertEqual(states[1]["state"], "FAILED")
        self.assertIn("exit 1", states[1]["cause"])
        self.assertEqual(states[2]["state"], "INFEASIBLE")
        self.assertIn("never reported score", states[2]["cause"])
        self.assertEqual(states[3]["state"], "SUCCEEDED")

    def test_too_many_failed_trials_fail_the_tuning_job(self):
        spec = self.write_spec([integer("x", 1, 9)], env={"FAIL_WHEN": "*"},
                               maxTrialCount=5, maxFailedTrialCount=2)
        code, out, err = self.tune(spec)
        self.assertEqual(code, 1, out + err)
        rec = self.record()
        self.assertEqual(rec["state"], "FAILED")
        self.assertEqual(len(rec["trials"]), 2)
        self.assertIn("maxFailedTrialCount 2", rec["cause"])

    def test_median_rule_stops_a_clearly_bad_trial(self):
        spec = self.write_spec([integer("x", 0, 4)], env={"BAD_TRIAL": "4", "STEPS": "3"},
                               study={"medianAutomatedStoppingSpec": {}}, maxTrialCount=4)
        started = time.monotonic()
        code, out, err = self.tune(spec)
        self.assertEqual(code, 0, out + err)
        bad = self.record()["trials"][3]
        self.assertTrue(bad.get("earlyStopped"), bad)
        self.assertEqual(bad["state"], "SUCCEEDED")
        self.assertIn("worse than the median", bad["cause"])
        # Without the rule the bad trial would have run to the trial job's timeout (120 s).
        self.assertLess(time.monotonic() - started, 100)

    # -- cancellation and resume ---------------------------------------------------------

    def test_sigint_stops_the_running_trials_and_resume_finishes_the_job(self):
        hold = os.path.join(self.dir, "hold")
        open(hold, "w").close()
        spec = self.write_spec([integer("x", 0, 4)], env={"SLOW_WHILE": hold},
                               maxTrialCount=3, parallelTrialCount=2)
        proc = self.start(spec, "--job-id", self.job_id, "--stop-grace", "3")
        reported = lambda: sum(bool(t["measurements"]) for t in self.record()["trials"]) == 2
        self.assertTrue(self.wait_for(reported), "two trials did not report")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 128 + signal.SIGINT, out + err)
        rec = self.record()
        self.assertEqual(rec["state"], "CANCELLED")
        self.assertEqual([t["state"] for t in rec["trials"]], ["STOPPED", "STOPPED"])
        self.assertEqual(job_processes(self.job_id), [])
        # Resume: the stopped trials run again with their parameters, then one more.
        os.unlink(hold)
        tuning_dir = os.path.join(self.dir, self.job_id)
        proc = self.start("--resume", tuning_dir, "--stop-grace", "3")
        out, err = proc.communicate(timeout=150)
        self.assertEqual(proc.returncode, 0, out + err)
        rec = self.record()
        self.assertEqual(rec["state"], "SUCCEEDED")
        trials = rec["trials"]
        self.assertEqual(len(trials), 5)
        self.assertEqual(self.values(trials[2]), self.values(trials[0]))
        self.assertEqual(self.values(trials[3]), self.values(trials[1]))
        self.assertIn("run again as trial 3", trials[0]["cause"])
        self.assertEqual([t["state"] for t in trials[2:]], ["SUCCEEDED"] * 3)

    # -- the spec ------------------------------------------------------------------------

    def test_bad_spec_is_refused_with_its_position(self):
        spec = self.write_spec([integer("x", 3, 1)])
        code, out, err = self.tune(spec)
        self.assertEqual(code, 2)
        self.assertRegex(err, r"tune\.json:1:\d+: studySpec\.parameters\[0\]\.integerValueSpec"
                              r"\.maxValue: maxValue must be above minValue")
        self.assertFalse(os.path.exists(os.path.join(self.dir, self.job_id)))

    def test_validate_describes_a_tuning_spec(self):
        spec = self.write_spec([integer("x", 0, 4)], ranks=2, reducers=1)
        res = subprocess.run([REDUCECTL, "validate", spec], capture_output=True, text=True)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("tuning job 'tune-test': 4 trials, 1 at once, 1 parameters, Bayesian",
                      res.stdout)
        self.assertIn("reducer x1", res.stdout)
        example = os.path.join(SOURCE, "examples/jobs/tune_ddp.yaml")
        res = subprocess.run([REDUCECTL, "validate", example], capture_output=True, text=True)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("tuning job 'tune-ddp': 6 trials, 2 at once, 2 parameters", res.stdout)


if __name__ == "__main__":
    main()  # skipped: no Python package built
