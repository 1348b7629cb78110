# SPDX-License-Identifier: BSD-3-Clause
"""A trial program for the tuning tests: reads its hyperparameters (--name=value), reports an
objective the way cloudml-hypertune does, and misbehaves on request.

The objective: the sum over numeric parameters of -(value - 2)^2 (0 at value 2). Behaviour from
the environment (the spec's env):
  TRIAL_LOG       append "start|end TRIAL_ID EPOCH_SECONDS" lines (concurrency checks)
  FAIL_WHEN       "x=1": exit 3 when the parameter x is 1; "*": always
  SILENT_WHEN     "x=2": exit 0 without reporting
  BAD_TRIAL       a trial id: report a terrible objective at each step, then sleep (to be
                  stopped early)
  SLOW_WHILE      a path: while that file exists, sleep after the first report (to be cancelled)
  STEPS           reports at steps 0..STEPS-1 (default 1), the last one the objective
  USE_LIBREDUCE   "1": all-reduce the objective across the ranks through the job's reducers
                  and report with libreduce.hypertune (else write the file as cloudml-hypertune
                  does: in place, not atomically)
"""

import json
import os
import sys
import time


def parse_params(argv):
    params = {}
    for arg in argv:
        if arg.startswith("--") and "=" in arg:
            name, value = arg[2:].split("=", 1)
            try:
                params[name] = float(value)
            except ValueError:
                params[name] = value
    return params


def objective(params):
    return sum(-(v - 2.0) ** 2 for v in params.values() if isinstance(v, float))


class PlainReporter:
    """cloudml-hypertune's way: the whole file rewritten in place on every report."""

    def __init__(self):
        self.path = os.environ.get("CLOUD_ML_HP_METRIC_FILE", "/tmp/hypertune/output.metrics")
        self.lines = []

    def report(self, tag, value, step):
        self.lines.append(json.dumps({
            tag: str(value), "checkpoint_path": "", "global_step": str(step),
            "timestamp": time.time(), "trial": os.environ.get("CLOUD_ML_TRIAL_ID", "0")},
            sort_keys=True))
        with open(self.path, "w") as f:
            f.write("\n".join(self.lines) + "\n")


def reporter():
    if os.environ.get("USE_LIBREDUCE") == "1":
        from libreduce import hypertune
        ht = hypertune.HyperTune()
        return lambda tag, value, step: ht.report_hyperparameter_tuning_metric(
            hyperparameter_metric_tag=tag, metric_value=value, global_step=step)
    plain = PlainReporter()
    return plain.report


def matches(rule, params):
    if not rule:
        return False
    if rule == "*":
        return True
    name, value = rule.split("=", 1)
    return name in params and str(params[name]) in (value, str(float(value)))


def log(kind, trial):
    path = os.environ.get("TRIAL_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{kind} {trial} {time.time():.3f}\n")


def all_reduced(value):
    import numpy as np
    import libreduce
    comm = libreduce.Communicator.from_env()
    buf = np.full(1024, value, dtype=np.float64)
    comm.all_reduce(buf)
    n = int(os.environ["WORLD_SIZE"])
    if not np.allclose(buf, value * n):
        sys.exit(f"all-reduce gave {buf[0]}, expected {value * n}")
    return float(buf[0]) / n


def main():
    params = parse_params(sys.argv[1:])
    trial = os.environ.get("CLOUD_ML_TRIAL_ID", "")
    rank = int(os.environ.get("RANK", "0"))
    log("start", trial)
    if matches(os.environ.get("FAIL_WHEN"), params):
        sys.exit(3)
    value = objective(params)
    if os.environ.get("USE_LIBREDUCE") == "1":
        value = all_reduced(value)
    if rank != 0 or matches(os.environ.get("SILENT_WHEN"), params):
        log("end", trial)
        return
    report = reporter()
    steps = int(os.environ.get("STEPS", "1"))
    bad = os.environ.get("BAD_TRIAL") == trial
    for step in range(steps):
        report("score", -1000.0 - step if bad else value - (steps - 1 - step), step)
        slow = os.environ.get("SLOW_WHILE")
        while bad or (slow and os.path.exists(slow)):
            time.sleep(0.1)
    log("end", trial)


if __name__ == "__main__":
    main()
