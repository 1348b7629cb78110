# SPDX-License-Identifier: BSD-3-Clause
"""Unit tests of the emulated-cluster benchmark harness (bench/cluster) that need no root.

They cover what the smoke run cannot check cheaply: rate and scenario parsing, the cost model's
figures, the addresses of the topology (only 198.18.0.0/15), the report files built from
nccl-tests style JSON, the verdict, and the bounded waits of the process runner (a timeout
kills, a failure is reported with the log's tail).

  python3 -m unittest -v tests/bench/test_emulated_cluster.py
"""
from __future__ import annotations

import csv
import importlib.util
import ipaddress
import json
import os
import sys
import tempfile
import time
import unittest
from pathlib import Path
from unittest import mock

CLUSTER_DIR = Path(__file__).resolve().parents[2] / "bench" / "cluster"
sys.path.insert(0, str(CLUSTER_DIR))

import emulated_cluster  # noqa: E402  pylint: disable=wrong-import-position
import netns  # noqa: E402  pylint: disable=wrong-import-position
import report  # noqa: E402  pylint: disable=wrong-import-position
import runners  # noqa: E402  pylint: disable=wrong-import-position

BENCH_NET = ipaddress.ip_network("198.18.0.0/15")


def perf_doc(algbw_by_size: dict[int, float], wrong: int = 0, cpu_us: float = 0.0) -> dict:
    """A document shaped like the perf programs' -J output."""
    results = []
    for size, algbw in algbw_by_size.items():
        figures = {"time_us": size / algbw / 1e3, "algbw": algbw, "busbw": algbw,
                   "cpu_us": cpu_us, "wrong": wrong}
        results.append({"coll": "allreduce", "size": size, "count": size // 4, "type": "float32",
                        "redop": "sum", "root": -1, "out_of_place": figures,
                        "in_place": dict(figures)})
    return {"program": "test", "system": "test", "nranks": 4, "results": results}


class ParsingTest(unittest.TestCase):
    def test_rates(self):
        self.assertEqual(netns.parse_rate("1gbit"), 1e9)
        self.assertEqual(netns.parse_rate("500mbit"), 5e8)
        self.assertIsNone(netns.parse_rate("none"))
        with self.assertRaises(ValueError):
            netns.parse_rate("fast")

    def test_burst_never_below_a_gso_packet(self):
        self.assertEqual(netns.tbf_burst_bytes(100e6), netns.TBF_MIN_BURST_BYTES)
        self.assertEqual(netns.tbf_burst_bytes(10e9), 1_250_000)

    def test_scenario_defaults_and_errors(self):
        defaults = emulated_cluster.Scenario(4, 4, "1gbit")
        self.assertEqual(emulated_cluster.parse_scenario("n=8,rate=500mbit", defaults),
                         emulated_cluster.Scenario(8, 4, "500mbit"))
        self.assertEqual(emulated_cluster.parse_scenario("", defaults).label, "n4-k4-1gbit")
        for bad in ("n=1", "x=3", "rate=quick", "n"):
            with self.assertRaises(ValueError, msg=bad):
                emulated_cluster.parse_scenario(bad, defaults)

    def test_smoke_settings(self):
        args = emulated_cluster.parse_args(["--smoke", "--out", "/tmp/x"])
        self.assertEqual(args.scenarios, [emulated_cluster.Scenario(2, 2, "100mbit")])
        self.assertEqual((args.minbytes, args.maxbytes, args.iters), ("4K", "256K", 2))

    def test_sizes_flag(self):
        args = emulated_cluster.parse_args(["--sizes", "4K,64M", "--out", "/tmp/x"])
        self.assertEqual((args.minbytes, args.maxbytes), ("4K", "64M"))


class ModelTest(unittest.TestCase):
    def test_speedup_matches_the_reference_figures(self):
        self.assertAlmostEqual(report.model_speedup(2, 2), 1.0)
        self.assertAlmostEqual(report.model_speedup(4, 4), 1.5)
        self.assertAlmostEqual(report.model_speedup(8, 8), 1.75)
        self.assertAlmostEqual(report.model_speedup(8, 4), 0.875)  # k*Br = n*B/2 loses
        self.assertAlmostEqual(report.model_speedup(4, 2), 0.75)

    def test_algbw(self):
        self.assertAlmostEqual(report.model_algbw("rs", 4, 4, 1e9), 0.125)
        self.assertAlmostEqual(report.model_algbw("ring", 4, 4, 1e9), 0.125 / 1.5)
        self.assertIsNone(report.model_algbw("rs", 4, 4, None))


class TopologyTest(unittest.TestCase):
    def test_addresses_and_names(self):
        topo = netns.Topology("rdbtest", 8, 8, "1gbit", switch_address=True)
        addrs = [h.addr for h in topo.hosts] + [netns.SWITCH_ADDR]
        self.assertEqual(len(set(addrs)), len(addrs))
        for addr in addrs:
            self.assertIn(ipaddress.ip_address(addr), BENCH_NET)
        for host in topo.hosts:
            self.assertTrue(host.netns.startswith("rdbtest-"))
            self.assertLessEqual(len(host.name), 15)  # interface name limit

    def test_nothing_is_created_until_asked(self):
        topo = netns.Topology("rdbtest", 2, 1, "none")
        self.assertEqual(topo.destroy(), [])


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = Path(self.tmp.name)
        self.scenario = {"label": "n4-k4-1gbit", "n": 4, "k": 4, "rate": "1gbit",
                         "rate_bps": 1e9, "probe": {"path": "w0->w1", "seconds": 1, "bps": 9e8}}
        base = {"scenario": "n4-k4-1gbit", "repeat": 0, "n": 4, "k": 4, "rate": "1gbit"}
        self.rows = (report.rows_from_perf_json(perf_doc({4096: 0.01, 1 << 20: 0.12}),
                                                {**base, "system": "rs"})
                     + report.rows_from_perf_json(perf_doc({4096: 0.02, 1 << 20: 0.08}),
                                                  {**base, "system": "ring"}))
        self.runs = [{"scenario": "n4-k4-1gbit", "system": s, "repeat": 0, "status": "ok",
                      "note": ""} for s in ("rs", "ring")]

    def tearDown(self):
        self.tmp.cleanup()

    def test_rows(self):
        self.assertEqual(len(self.rows), 8)
        self.assertEqual({r["placement"] for r in self.rows}, {"out_of_place", "in_place"})

    def test_markdown_has_ratios_and_model(self):
        text = report.scenario_markdown(self.scenario, self.runs, self.rows)
        # rs/line: against the probed 900 Mbit/s = 0.1125 GB/s.
        self.assertIn("| 1 MiB | 0.120 | 0.0800 | 1.50 | 1.50 | 1.07 |", text)
        self.assertIn("rs/ring 1.50", text)
        self.assertIn("900 Mbit/s", text)
        self.assertIn("#wrong: rs 0, ring 0.", text)

    def test_cpu_per_gb_from_the_processes_accounting(self):
        # 1 MiB calls costing each worker 2097 us of CPU: 2.0 CPU-s per GB; the reducers used
        # 5 s over 2.5 GB of calls: 2.0 CPU-s per GB; 4 workers + reducers: 10.0.
        base = {"scenario": "n4-k4-1gbit", "repeat": 0, "n": 4, "k": 4, "rate": "1gbit"}
        rows = report.rows_from_perf_json(perf_doc({1 << 20: 0.12}, cpu_us=2097.152),
                                          {**base, "system": "rs"})
        runs = [{"scenario": "n4-k4-1gbit", "system": "rs", "repeat": 0, "status": "ok",
                 "note": "", "reducer_cpu_s": 5.0, "reduced_bytes": 2.5e9}]
        text = report.scenario_markdown(self.scenario, runs, rows)
        self.assertIn("| rs | 0.120 | 2.00 | 2.00 | 10.00 |", text)

    def test_auto_against_the_better_of_rs_and_ring(self):
        base = {"scenario": "n4-k4-1gbit", "repeat": 0, "n": 4, "k": 4, "rate": "1gbit"}
        rows = self.rows + report.rows_from_perf_json(perf_doc({4096: 0.019, 1 << 20: 0.12}),
                                                      {**base, "system": "auto"})
        text = report.scenario_markdown(self.scenario, self.runs, rows)
        self.assertIn("| 4 KiB | 0.0190 | ring 0.0200 | 0.95 |", text)
        self.assertIn("| 1 MiB | 0.120 | rs 0.120 | 1.00 |", text)

    def test_same_process_comparison(self):
        # rd_perf --algo auto,rs,ring writes one result per algorithm; the first carries its
        # time against the fastest other (here ring's 90 us against auto's 100 us: 0.90).
        doc = {"program": "rd_perf", "mode": "compare", "results": []}
        for name, us in (("auto", 100.0), ("rs", 120.0), ("ring", 90.0)):
            result = {"system": f"libreduce {name}", "coll": "allreduce", "size": 8192,
                      "count": 2048, "type": "float32", "redop": "sum",
                      "out_of_place": {"time_us": us, "algbw": 8192 / us / 1e3, "wrong": 0,
                                       "round_us": [us, us]}}
            if name == "auto":
                result.update(best_other="libreduce ring", vs_best=0.9)
            doc["results"].append(result)
        base = {"scenario": "n4-k4-1gbit", "repeat": 0, "n": 4, "k": 4, "rate": "1gbit",
                "system": "auto-same"}
        rows = report.rows_from_perf_json(doc, base)
        self.assertEqual([r["system"] for r in rows],
                         ["auto-same:auto", "auto-same:rs", "auto-same:ring"])
        text = report.scenario_markdown(self.scenario, self.runs, rows)
        self.assertIn("| 8 KiB | 0.900 | 0.900 | 0.900 |", text)
        self.assertIn("auto-same:ring", text)

    def test_reducer_cpu_is_read_from_each_reducers_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            procs = runners.ProcessSet(Path(tmp))
            (Path(tmp) / "r0.log").write_text("x\nLIBREDUCE_REDUCER_CPU user_s=1.5 sys_s=0.25\n")
            (Path(tmp) / "r1.log").write_text("LIBREDUCE_REDUCER_CPU user_s=0.5 sys_s=0.75\n")
            self.assertAlmostEqual(runners.reducer_cpu_seconds(procs, ["r0", "r1"]), 3.0)
            (Path(tmp) / "r2.log").write_text("killed before it could say\n")
            self.assertIsNone(runners.reducer_cpu_seconds(procs, ["r0", "r2"]))

    def test_csv_and_json(self):
        report.write_csv(self.out / "r.csv", self.rows)
        with open(self.out / "r.csv") as f:
            read = list(csv.DictReader(f))
        self.assertEqual(len(read), 8)
        self.assertEqual(list(read[0]), report.ROW_FIELDS)
        report.write_json(self.out / "r.json", [self.scenario], self.runs, self.rows)
        self.assertEqual(len(json.loads((self.out / "r.json").read_text())["results"]), 8)

    # scripts/setup.sh installs matplotlib: in CI (CI=true) its absence fails here.
    @unittest.skipUnless(importlib.util.find_spec("matplotlib") or os.environ.get("CI") == "true",
                         "matplotlib not installed")
    def test_plots(self):
        second = dict(self.scenario, label="n2-k2-1gbit", n=2, k=2)
        rows = self.rows + [dict(r, scenario="n2-k2-1gbit", n=2, k=2) for r in self.rows]
        names = report.write_plots(self.out, [self.scenario, second], rows)
        self.assertIn("speedup-vs-n.png", names)
        for name in names:
            self.assertGreater((self.out / name).stat().st_size, 1000)

    def test_verdict(self):
        for name in ("results.csv", "results.json", "results.md", "meta.json"):
            (self.out / name).write_text("x")
        results = {"runs": self.runs, "rows": self.rows}
        code, _ = emulated_cluster.verdict(results, ["rs", "ring"], self.out, smoke=True)
        self.assertEqual(code, emulated_cluster.EXIT_OK)
        results["rows"][0] = dict(results["rows"][0], wrong=3)
        code, summary = emulated_cluster.verdict(results, ["rs", "ring"], self.out, smoke=True)
        self.assertEqual(code, emulated_cluster.EXIT_FAILED)
        self.assertIn("#wrong = 3", summary)


class RunnerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.procs = runners.ProcessSet(Path(self.tmp.name))

    def tearDown(self):
        self.procs.stop()
        self.tmp.cleanup()

    def start(self, name: str, script: str):
        self.procs.start(name, [sys.executable, "-c", script], {})

    def test_all_ok(self):
        self.start("w0", "pass")
        self.start("w1", "pass")
        self.assertEqual(runners.wait_ranks(self.procs, ["w0", "w1"], 10), ("ok", ""))

    def test_timeout_is_bounded(self):
        self.start("w0", "import time; time.sleep(60)")
        began = time.monotonic()
        status, note = runners.wait_ranks(self.procs, ["w0"], 0.5)
        self.assertEqual(status, "timeout")
        self.assertIn("w0", note)
        self.assertLess(time.monotonic() - began, 5)

    def test_failure_names_the_rank_and_its_log(self):
        self.start("w0", "import sys; print('boom: peer gone'); sys.exit(3)")
        self.start("w1", "import time; time.sleep(60)")
        with mock.patch.object(runners, "FAILURE_GRACE_S", 0.3):
            status, note = runners.wait_ranks(self.procs, ["w0", "w1"], 30)
        self.assertEqual(status, "failed")
        self.assertIn("w0 rc=3", note)
        self.assertIn("boom: peer gone", note)

    def test_identity_variables_are_not_inherited(self):
        with mock.patch.dict("os.environ", {"RANK": "5", "OMPI_COMM_WORLD_RANK": "5",
                                            "LIBREDUCE_CHUNK_BYTES": "2M"}):
            env = runners.base_env()
        self.assertNotIn("RANK", env)
        self.assertNotIn("OMPI_COMM_WORLD_RANK", env)
        self.assertEqual(env["LIBREDUCE_CHUNK_BYTES"], "2M")


if __name__ == "__main__":
    unittest.main()
