# SPDX-License-Identifier: BSD-3-Clause
"""`reducectl run --trace`: every replica of a local job, ranks and built-in reducers, writes its
timeline into the job's directory, and reducectl merges them into JOB_DIR/trace.json at the end,
the spec's own `libreduce: {trace: DIR}` notwithstanding."""

import json
import os

from test_reducectl_jobs import DEMO, JobCase, main, pool, sh


class TraceSwitchTests(JobCase):
    def test_every_replicas_timeline_is_merged_at_the_end(self):
        elsewhere = os.path.join(self.dir, "elsewhere")
        os.mkdir(elsewhere)
        demo = sh(" ".join([DEMO, "--max-bytes", "64K", "--iters", "2", "--warmup", "0"]))
        spec = self.write_spec([pool(1, demo), pool(1, demo), pool(2, None)],
                               libreduce={"trace": elsewhere})
        code, out, err = self.run_job(spec, "--trace")
        self.assertEqual(code, 0, out + err)
        job_dir = os.path.join(self.dir, self.job_id)
        self.assertIn(f"timeline of 4 process(es): {job_dir}/trace.json", out + err)
        self.assertEqual(len(os.listdir(os.path.join(job_dir, "trace"))), 4)
        self.assertEqual(os.listdir(elsewhere), [], "--trace wins over the spec's setting")
        with open(os.path.join(job_dir, "trace.json")) as f:
            events = json.load(f)  # Chrome's JSON array format
        processes = {e["args"]["name"] for e in events
                     if e.get("ph") == "M" and e.get("name") == "process_name"}
        ranks = sorted(p for p in processes if p.startswith("rank "))
        reducers = [p for p in processes if p.startswith("reducer ")]
        self.assertEqual(ranks, ["rank 0 of 2", "rank 1 of 2"], processes)
        self.assertEqual(len(reducers), 2, processes)
        # Each rank's operations are there, and each reducer served chunks.
        for name in ranks + reducers:
            pid = next(e["pid"] for e in events if e.get("ph") == "M"
                       and e.get("name") == "process_name" and e["args"]["name"] == name)
            spans = [e for e in events if e["pid"] == pid and e.get("ph") == "X"]
            self.assertTrue(spans, f"{name} has no spans")


if __name__ == "__main__":
    main()
