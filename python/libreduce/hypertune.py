# SPDX-License-Identifier: BSD-3-Clause
"""Reports a tuning trial's metric in the format of Google's ``cloudml-hypertune``, atomically.

Training code written for Vertex AI hyperparameter tuning keeps working under reducectl, with or
without the Google package installed::

    try:
        import hypertune
    except ImportError:
        from libreduce import hypertune

    hpt = hypertune.HyperTune()
    hpt.report_hyperparameter_tuning_metric("accuracy", 0.91, global_step=3)

What cloudml-hypertune does (GoogleCloudPlatform/cloudml-hypertune, hypertune/hypertune.py,
unchanged since release 0.1.0.dev6), and this module does the same:

- The file is ``$CLOUD_ML_HP_METRIC_FILE``, or ``/tmp/hypertune/output.metrics`` when that is
  unset; its directory is created.
- An empty tag means ``training/hptuning/metric``.
- Each report is one JSON object on a line, keys sorted, default separators: the tag with the
  value as ``str(float(value))`` ("0.91", "nan"), ``global_step`` as ``str(int(step))`` ("0"
  when the step is None or 0), ``checkpoint_path`` (a string, "" by default; releases up to
  0.1.0.dev5 lack it), ``timestamp`` as ``time.time()`` (a JSON number), ``trial`` as
  ``$CLOUD_ML_TRIAL_ID`` ("0" by default). Only timestamp is a number; the rest are strings.
- One object keeps its last 100 reports and rewrites the whole file on every report.

The one difference: cloudml-hypertune truncates the file and writes it in place, so a reader
polling it can find it empty or cut inside a line; here the file is written beside the target,
flushed to disk and renamed over it, so a reader sees the previous version or the new one. The
directory is created on the first report rather than on construction, and a bare file name (no
directory) is taken relative to the working directory.

Only the standard library is used: the module can also be copied next to a training program and
imported as ``hypertune``.
"""

import collections
import json
import os
import time
import uuid

__all__ = ["HyperTune"]

_DEFAULT_METRIC_TAG = "training/hptuning/metric"
_DEFAULT_METRIC_PATH = "/tmp/hypertune/output.metrics"
_MAX_REPORTS_KEPT = 100


class HyperTune(object):
    """Writes metric reports for the hyperparameter-tuning service (here: reducectl)."""

    def __init__(self):
        self.metric_path = os.environ.get("CLOUD_ML_HP_METRIC_FILE", _DEFAULT_METRIC_PATH)
        self.trial_id = os.environ.get("CLOUD_ML_TRIAL_ID", 0)
        self.metrics_queue = collections.deque(maxlen=_MAX_REPORTS_KEPT)

    def report_hyperparameter_tuning_metric(self, hyperparameter_metric_tag, metric_value,
                                            global_step=None, checkpoint_path=""):
        """Records one report and rewrites the metrics file with the last 100.

        Args:
          hyperparameter_metric_tag: the metric's name, as the tuning spec's metricId names it
            (empty: "training/hptuning/metric").
          metric_value: a number (anything float() accepts).
          global_step: the step (an int) the value was measured at; None is step 0.
          checkpoint_path: a checkpoint the trial could be resumed from ("" for none).
        """
        metric_value = float(metric_value)
        tag = hyperparameter_metric_tag or _DEFAULT_METRIC_TAG
        self.metrics_queue.append({
            "timestamp": time.time(),
            "trial": str(self.trial_id),
            tag: str(metric_value),
            "global_step": str(int(global_step) if global_step else 0),
            "checkpoint_path": checkpoint_path,
        })
        self._write_file()

    def _write_file(self):
        text = "".join(json.dumps(entry, sort_keys=True) + "\n" for entry in self.metrics_queue)
        directory = os.path.dirname(self.metric_path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        # Same directory, so the rename stays within one file system; a unique name, so two
        # reporters never write the same temporary; mode 0666 less the umask, as open() gives.
        temp = os.path.join(directory, ".%s.%d.%s.tmp" % (
            os.path.basename(self.metric_path), os.getpid(), uuid.uuid4().hex[:8]))
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, self.metric_path)
        except BaseException:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise
