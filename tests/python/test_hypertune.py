# SPDX-License-Identifier: BSD-3-Clause
"""libreduce.hypertune: cloudml-hypertune's file format (as reducectl's reader expects it),
written atomically.

The module is loaded from the source tree: it needs nothing built, and `import libreduce` would
load the compiled core.
"""

import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import PACKAGE_DIR, REDUCECTL, ROOT

SOURCE = ROOT / "python" / "libreduce" / "hypertune.py"


def load():
    spec = importlib.util.spec_from_file_location("libreduce_hypertune_under_test", SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hypertune = load()


@pytest.fixture
def metric_file(tmp_path, monkeypatch):
    path = tmp_path / "trial" / "output.metrics"
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(path))
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "7")
    return path


def lines(path):
    text = path.read_text()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def test_lines_are_cloudml_hypertunes_format(metric_file):
    hpt = hypertune.HyperTune()
    before = time.time()
    hpt.report_hyperparameter_tuning_metric("accuracy", 0.5, global_step=1)
    hpt.report_hyperparameter_tuning_metric("loss", 1, global_step=2.0, checkpoint_path="ck/2")
    hpt.report_hyperparameter_tuning_metric("loss", float("nan"))
    first, second, third = lines(metric_file)
    assert first == {"accuracy": "0.5", "checkpoint_path": "", "global_step": "1",
                     "timestamp": first["timestamp"], "trial": "7"}
    assert isinstance(first["timestamp"], float) and before <= first["timestamp"] <= time.time()
    assert second["loss"] == "1.0" and second["global_step"] == "2"
    assert second["checkpoint_path"] == "ck/2"
    assert third["loss"] == "nan" and third["global_step"] == "0"
    # Exactly json.dumps(sort_keys=True): keys in order, ", " and ": " separators.
    raw = metric_file.read_text().splitlines()[0]
    assert raw == ('{"accuracy": "0.5", "checkpoint_path": "", "global_step": "1", '
                   '"timestamp": %r, "trial": "7"}' % first["timestamp"])


def test_empty_tag_is_the_default_tag(metric_file):
    hypertune.HyperTune().report_hyperparameter_tuning_metric("", 0.25)
    assert lines(metric_file)[0]["training/hptuning/metric"] == "0.25"


def test_keeps_the_last_100_reports(metric_file):
    hpt = hypertune.HyperTune()
    for step in range(1, 151):
        hpt.report_hyperparameter_tuning_metric("loss", step / 10, global_step=step)
    got = lines(metric_file)
    assert len(got) == 100
    assert [int(m["global_step"]) for m in got] == list(range(51, 151))
    assert got[-1]["loss"] == "15.0"


def test_paths_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("CLOUD_ML_HP_METRIC_FILE", raising=False)
    monkeypatch.delenv("CLOUD_ML_TRIAL_ID", raising=False)
    hpt = hypertune.HyperTune()
    assert hpt.metric_path == "/tmp/hypertune/output.metrics"
    assert hpt.trial_id == 0
    # Nested directories are created on the first report; a bare name is relative to the cwd.
    nested = tmp_path / "a" / "b" / "c.metrics"
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(nested))
    hypertune.HyperTune().report_hyperparameter_tuning_metric("m", 1)
    assert lines(nested)[0]["trial"] == "0"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", "bare.metrics")
    hypertune.HyperTune().report_hyperparameter_tuning_metric("m", 2)
    assert lines(tmp_path / "bare.metrics")[0]["m"] == "2.0"


def test_no_temporary_files_left_and_mode_follows_umask(metric_file):
    hpt = hypertune.HyperTune()
    for step in range(5):
        hpt.report_hyperparameter_tuning_metric("m", step, global_step=step)
    assert os.listdir(metric_file.parent) == [metric_file.name]
    umask = os.umask(0)
    os.umask(umask)
    assert metric_file.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_reader_never_sees_a_partial_file(metric_file):
    """Another process reports 400 times while this one reads: every read finds no file or a
    complete one (every line whole JSON, the line count never going down)."""
    reports = 400
    writer = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; sys.path.insert(0, sys.argv[1]); import hypertune\n"
         "h = hypertune.HyperTune()\n"
         "for i in range(1, int(sys.argv[2]) + 1):\n"
         "    h.report_hyperparameter_tuning_metric('loss', 1.0 / i, global_step=i, "
         "checkpoint_path='x' * 2000)\n",
         str(SOURCE.parent), str(reports)],
        env=dict(os.environ))
    reads, last_count = 0, 0
    try:
        while True:
            done = writer.poll() is not None
            try:
                text = metric_file.read_text()
            except FileNotFoundError:
                assert last_count == 0, "the file vanished after it was written"
                text = None
            if text is not None:
                reads += 1
                assert text.endswith("\n"), "partial file: %d bytes" % len(text)
                got = [json.loads(line) for line in text.splitlines()]
                assert last_count <= len(got) <= 100
                last_count = len(got)
            if done:
                break
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.wait()
    assert writer.returncode == 0
    assert reads > 0
    got = lines(metric_file)
    assert len(got) == 100 and got[-1]["global_step"] == str(reports)


@pytest.mark.skipif(not (PACKAGE_DIR / "libreduce" / "hypertune.py").exists(),
                    reason="the built package has no hypertune module yet")
def test_importable_from_the_built_package():
    proc = subprocess.run(
        [sys.executable, "-c", "from libreduce import hypertune; print(hypertune.HyperTune)"],
        env=dict(os.environ, PYTHONPATH=str(PACKAGE_DIR)), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "HyperTune" in proc.stdout


def test_same_lines_as_googles_cloudml_hypertune(tmp_path, monkeypatch):
    """The real package (cloudml-hypertune from PyPI) and this module, given the same reports,
    write the same lines but for the time."""
    google = pytest.importorskip("hypertune")
    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "3")
    files = {}
    for name, module in (("google", google), ("libreduce", hypertune)):
        files[name] = tmp_path / name / "output.metrics"
        files[name].parent.mkdir()
        monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(files[name]))
        reporter = module.HyperTune()
        for step in range(105):  # past the 100 kept
            reporter.report_hyperparameter_tuning_metric("accuracy", step / 7, global_step=step)
        reporter.report_hyperparameter_tuning_metric("", 1, global_step=None)
    google_lines, ours = lines(files["google"]), lines(files["libreduce"])
    assert len(google_lines) == len(ours) == 100
    for theirs, mine in zip(google_lines, ours):
        assert isinstance(theirs.pop("timestamp"), float) and isinstance(mine.pop("timestamp"),
                                                                          float)
        theirs.setdefault("checkpoint_path", "")  # releases before 0.1.0.dev6 lack it
        assert mine == theirs


def test_reducectl_tune_reads_what_cloudml_hypertune_writes(tmp_path):
    """A tuning job whose trials report with Google's package: reducectl finds every metric."""
    pytest.importorskip("hypertune")
    trial = tmp_path / "trial.py"
    trial.write_text(
        "import sys, hypertune\n"
        "x = float(sys.argv[1].split('=')[1])\n"
        "hypertune.HyperTune().report_hyperparameter_tuning_metric('score', -(x - 2) ** 2, 1)\n")
    spec = {"displayName": "tune-cloudml-hypertune", "baseOutputDirectory": str(tmp_path),
            "maxTrialCount": 3, "parallelTrialCount": 1,
            "studySpec": {"metrics": [{"metricId": "score", "goal": "MAXIMIZE"}],
                          "parameters": [{"parameterId": "x", "integerValueSpec": {
                              "minValue": 1, "maxValue": 3}}],
                          "algorithm": "GRID_SEARCH"},
            "trialJobSpec": {"workerPoolSpecs": [
                {"replicaCount": 1, "command": [sys.executable, str(trial)]}],
                "scheduling": {"timeout": "120s"}}}
    (tmp_path / "tune.json").write_text(json.dumps(spec))
    run = subprocess.run([str(REDUCECTL), "tune", str(tmp_path / "tune.json"), "--job-id", "t1"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout
    record = json.loads((tmp_path / "t1" / "trials.json").read_text())
    got = {}
    for t in record["trials"]:
        x = float(t["parameters"][0]["value"])
        got[x] = t["finalMeasurement"]["metrics"]
    assert got == {x: [{"metricId": "score", "value": -(x - 2) ** 2}] for x in (1.0, 2.0, 3.0)}
