# SPDX-License-Identifier: BSD-3-Clause
"""Many ranks on one host through `reducectl launch`: 64 ranks and 2 reducers on this machine's
cores, rs, ring and auto communicators in the same processes, every result verified, and nobody
called frozen while 66 processes share the CPU. The larger jobs (128 and 256 ranks, beside a CPU hog)
are benchmarks: bench/scale/."""

import os
import re
import subprocess

from test_reducectl_jobs import BUILD, REDUCECTL, JobCase, main

RD_PERF = os.path.join(BUILD, "bench/rd_perf")
RANKS = 64


class ScaleTests(JobCase):
    def test_sixty_four_ranks_through_two_reducers_every_result_verified(self):
        if not os.path.exists(RD_PERF):
            self.skipTest("rd_perf is not built here (benchmarks off)")
        footprint = os.path.join(self.dir, "footprint.txt")
        cmd = [REDUCECTL, "launch", "--workers", str(RANKS), "--reducers", "2",
               "--job-id", self.job_id, "--output-dir", self.dir, "--stop-grace", "3",
               "--quiet", "--timeout", "400", "--",
               RD_PERF, "--algo", "rs,ring,auto", "-b", "4K", "-e", "1M", "-f", "16", "-n", "5",
               "-w", "2", "--rounds", "2", "--footprint", footprint]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=500)
        logs_dir = os.path.join(self.dir, self.job_id, "reducectl")
        logs = {}
        for name in os.listdir(logs_dir):
            if name.endswith(".log"):
                with open(os.path.join(logs_dir, name), errors="replace") as f:
                    logs[name] = f.read()
        self.assertEqual(run.returncode, 0, run.stderr + logs.get("primary-0.log", ""))
        table = logs["primary-0.log"]
        # 3 sizes, each on the 3 communicators, and the table's verification found nothing.
        rows = [line for line in table.splitlines() if re.match(r"\s+\d+\s+\d+\s+float", line)]
        self.assertEqual(len(rows), 3, table)
        self.assertIn("# Out of bounds values : 0 OK", table)
        for name, text in logs.items():
            self.assertNotIn("sent nothing for", text, name)
        # Every rank joined its 5 communicators (ids, line-up, rs, ring, auto) and said what it
        # cost.
        with open(footprint) as f:
            lines = [dict(field.split("=") for field in line.split()) for line in f]
        self.assertEqual(sorted(int(line["rank"]) for line in lines), list(range(RANKS)))
        for line in lines:
            self.assertEqual(line["nranks"], str(RANKS), line)
            self.assertEqual(line["communicators"], "5", line)
            # A rank holds the reducers' and its ring neighbours' connections (about 9 sockets
            # per communicator, whatever n: bench/scale/growth.sh); one connected to every other
            # rank would hold at least 63.
            self.assertLess(int(line["sockets"]), RANKS - 1, line)
        # Both reducers served operations of this job.
        for reducer in ("reducer-0.log", "reducer-1.log"):
            served = re.findall(r"LIBREDUCE_REDUCER_SERVED lane=\d+ chunks=\d+ operations=(\d+)",
                                logs[reducer])
            self.assertTrue(served and int(served[0]) > 0, logs[reducer])


if __name__ == "__main__":
    main()
