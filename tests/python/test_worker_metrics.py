# SPDX-License-Identifier: BSD-3-Clause
"""LIBREDUCE_METRICS on the workers: each rank writes its per-collective histograms to a textfile
of its own (what node_exporter's textfile collector reads), labelled as NCCL's Inspector labels
its figures; parsed by prometheus_client, counted against the job's calls. A directory that does
not exist turns the metrics off with a warning and loses nothing else."""

import pytest

from conftest import assert_all_ok, run_ranks

parser = pytest.importorskip("prometheus_client.parser")

COUNT, ITERS = 100_000, 6


def test_each_rank_writes_its_collectives(reducers, tmp_path):
    addresses = reducers.start(1)
    out = tmp_path / "textfiles"
    out.mkdir()
    results = run_ranks("core_worker.py", 2, ["sums", COUNT, ITERS], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=90,
                        extra={"LIBREDUCE_METRICS": str(out), "CLOUD_ML_JOB_ID": "metrics-job"})
    assert_all_ok(results)
    files = sorted(out.glob("libreduce-*.prom"))
    assert len(files) == 2, files  # one per rank, written at exit
    for f in files:
        found = {}
        for family in parser.text_string_to_metric_families(f.read_text()):
            for s in family.samples:
                found.setdefault(s.name, []).append(s)
        counts = [s for s in found["libreduce_collective_seconds_count"]
                  if s.labels["collective"] == "AllReduce"]
        assert len(counts) == 1, counts
        labels = counts[0].labels
        assert counts[0].value == ITERS
        assert labels["message_size"] == "390-391KB"  # 400,000 bytes, as the Inspector writes it
        assert labels["algo_proto"] == "RS" and labels["nranks"] == "2"
        assert labels["slurm_job_id"] == "metrics-job"
        gbps = [s for s in found["libreduce_collective_algbw_gbs_sum"]
                if s.labels["collective"] == "AllReduce"]
        assert gbps[0].value > 0
        assert [s.value for s in found["libreduce_collective_failed_total"]] == [0]


def test_a_missing_directory_turns_metrics_off_and_the_job_goes_on(reducers, tmp_path):
    addresses = reducers.start(1)
    results = run_ranks("core_worker.py", 2, ["sums", 1000, 2], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=90,
                        extra={"LIBREDUCE_METRICS": str(tmp_path / "nowhere") + "/",
                               "LIBREDUCE_LOG_LEVEL": "warn"})
    assert_all_ok(results)
    for _, out in results:
        assert "SUMS OK" in out
        assert "LIBREDUCE_METRICS=" in out and "is not a directory" in out, out
