# SPDX-License-Identifier: BSD-3-Clause
"""Reducer failover under `reducectl run` (docs/failover.md): a reducer lost while the job runs
does not end the attempt; reducectl starts a replacement at its address, the ranks re-admit it,
and job.json records the failover with rank 0's view of what it cost. Real reducectl,
reduce-server and rd_worker_check processes."""

import os
import re
import signal
import sys
import time

from test_reducectl_jobs import BUILD, SOURCE, JobCase, main, pool, sh

sys.path.insert(0, os.path.join(SOURCE, "bench", "failover"))
from readmission import reducer_pids  # noqa: E402  (the one finder of a job's reducers)

CHECK = os.path.join(BUILD, "tests/rd_worker_check")
PERF = os.path.join(BUILD, "bench/rd_perf")
# 300 verified all-reduces of 1 MiB per rank, announcing after the 30th.
CHECK_ARGS = [CHECK, "--colls", "allreduce", "--counts", "262144", "--dtypes", "float32",
              "--ops", "sum", "--iters", "150", "--announce-after", "30"]


class FailoverTests(JobCase):
    def run_and_kill_a_reducer(self, spec, reducers, trigger="30 operations done", limit=180):
        """Runs the job and SIGKILLs its second reducer at the first output line that matches
        @trigger (a regular expression); returns (exit code, stdout, stderr)."""
        proc = self.start(spec)
        out = []
        deadline = time.monotonic() + limit
        killed = False
        try:
            for line in proc.stdout:
                out.append(line)
                if not killed and re.search(trigger, line):
                    pids = reducer_pids(self.job_id)
                    self.assertEqual(len(pids), reducers, "".join(out))
                    os.kill(pids[1], signal.SIGKILL)
                    killed = True
                self.assertLess(time.monotonic(), deadline, "".join(out))
            err = proc.stderr.read()
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        self.assertTrue(killed, "".join(out))
        return proc.returncode, "".join(out), err

    def test_lost_reducer_is_replaced_and_the_job_goes_on(self):
        spec = self.write_spec([pool(1, CHECK_ARGS), pool(2, CHECK_ARGS), pool(3, None)],
                               scheduling={"maxRestarts": 2}, libreduce={"heartbeat_ms": 1000})
        code, out, err = self.run_and_kill_a_reducer(spec, reducers=3)
        self.assertEqual(code, 0, out + err)
        self.assertEqual(out.count("300 checks, 0 failed"), 3, out)
        self.assertIn("reducer-1 killed by SIGKILL: the ranks go on with the other reducers; "
                      "starting a replacement at", err)
        self.assertIn("failover: reducer-1 lost at", err)
        rec = self.record()
        self.assertEqual((rec["state"], rec["attempts"], rec["restarts"]),
                         ("JOB_STATE_SUCCEEDED", 1, 0))
        [failover] = rec["failovers"]
        self.assertEqual((failover["reducer"], failover["cause"]), ("reducer-1", "killed by SIGKILL"))
        self.assertGreaterEqual(failover["replacementReadyAtSeconds"], failover["lostAtSeconds"])
        # What the loss cost, from rank 0's events: a kill is seen when the connection breaks,
        # so the rank had heard from the reducer within the heartbeat period (1000 ms) before.
        self.assertTrue(0 <= failover["silentMs"] < 1000, failover)
        self.assertGreaterEqual(failover["stalledMs"], 0, failover)
        self.assertEqual(failover["timeLostMs"], failover["silentMs"] + failover["stalledMs"], failover)
        results = {r["name"]: r for r in rec["replicas"]}
        self.assertEqual(results["reducer-1"]["restarts"], 1)

    def test_rd_perf_goes_on_through_a_lost_reducer(self):
        if not os.path.exists(PERF):
            self.skipTest("rd_perf is not built here (benchmarks off)")
        # Killed once the first size's row is out: the larger sizes run through the loss.
        perf = [PERF, "-b", "64K", "-e", "4M", "-f", "4", "-n", "40", "-w", "2", "--algo", "rs"]
        spec = self.write_spec([pool(1, perf), pool(1, perf), pool(3, None)],
                               libreduce={"heartbeat_ms": 1000})
        code, out, err = self.run_and_kill_a_reducer(spec, reducers=3,
                                                     trigger=r"^\[primary-0\]\s+65536\s")
        self.assertEqual(code, 0, out + err)
        self.assertIn("Out of bounds values : 0 OK", out)
        self.assertRegex(out, r"\[primary-0\]\s+4194304\s", "the last size ran")
        rec = self.record()
        self.assertEqual((rec["attempts"], len(rec["failovers"])), (1, 1), rec)

    def test_without_failover_a_lost_reducer_restarts_the_job(self):
        spec = self.write_spec([pool(1, CHECK_ARGS), pool(1, CHECK_ARGS), pool(2, None)],
                               scheduling={"maxRestarts": 1}, libreduce={"failover": 0})
        code, out, err = self.run_and_kill_a_reducer(spec, reducers=2)
        self.assertEqual(code, 0, out + err)
        self.assertIn("reducer-1 failed (killed by SIGKILL); restarting the job (restart 1 of 1)",
                      err)
        rec = self.record()
        self.assertEqual((rec["attempts"], rec["failovers"]), (2, []))

    def test_a_rank_that_fails_before_its_lost_reducer_ends_costs_one_restart(self):
        # The reducer's exit comes 0.5 s after the worker's failure that it caused (a socket
        # closes as a process starts to exit): one incident, one restart of the job, not a
        # restart of the worker and then a failed job. A stand-in reducer: only the order of
        # the two exits matters here.
        pid_file = os.path.join(self.dir, "reducer.pid")
        reducer = sh(f'echo $$ > {pid_file}; trap "sleep 0.5; exit 9" USR1; '
                     'echo "LIBREDUCE_REDUCER_READY address=127.0.0.1:9 pid=$$" '
                     '> "$LIBREDUCE_READY_FILE.tmp"; mv "$LIBREDUCE_READY_FILE.tmp" '
                     '"$LIBREDUCE_READY_FILE"; sleep 300 & wait $!')
        first = '[ "$TORCHELASTIC_RESTART_COUNT" -gt 0 ] && exit 0; '
        worker = sh(first + f'kill -USR1 $(cat {pid_file}); echo "reducer gone" >&2; exit 1')
        spec = self.write_spec([pool(1, sh(first + "exec sleep 300")), pool(1, worker),
                                pool(1, reducer)], scheduling={"maxRestarts": 1})
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        self.assertIn("reducer-0 failed (exit 9); restarting the job (restart 1 of 1)", err)
        self.assertNotIn("restarting worker-0", err)
        self.assertEqual(self.record()["attempts"], 2)

    def test_a_broken_events_file_is_named_and_the_record_still_written(self):
        # The primary writes a line that is not an event where the ranks' events go.
        primary = sh('echo "not an event {" >> "$LIBREDUCE_EVENTS_FILE"; exit 0')
        spec = self.write_spec([pool(1, primary)])
        code, _, err = self.run_job(spec)
        self.assertEqual(code, 0, err)
        self.assertIn("primary-0.events:1: not an event", err)
        self.assertEqual(self.record()["failovers"], [])


if __name__ == "__main__":
    main()
