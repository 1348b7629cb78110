#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""All-reduce rate before a reducer is lost, after, and once its replacement is re-admitted.

Runs one reducectl job (docs/failover.md): RANKS ranks of rd_worker_check doing verified
all-reduces of --mib MiB (out of place and in place in turn), REDUCERS reducers. Once rank 0
has done --kill-after operations, reducer-1 is SIGKILLed; reducectl starts its replacement at
the same address and the ranks re-admit it from an operation E (job.json's failovers). Each
rank writes the time of every all-reduce call; rank by rank this prints the median call before
the kill, between the kill and E, and from E + 10 on, and the ratio after / before.

With --nic-gbps (root, ip, tc) every replica runs in a network namespace of its own behind a
link capped at that rate (reducectl --emulate-network): where the links, not the two cores,
are the limit, losing one of 3 reducers shows, and so does getting it back.

  sudo bench/failover/readmission.py --build-dir build --nic-gbps 0.2 --out DIR
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import uuid


def reducer_pids(job_id):
    """The job's reduce-server processes, oldest first (their environment names the job)."""
    marker = ("CLOUD_ML_JOB_ID=" + job_id).encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as f:
                if marker not in f.read().split(b"\0"):
                    continue
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                if f.read().split(b"\0")[0].endswith(b"reduce-server"):
                    pids.append(int(entry))
        except OSError:
            continue
    return sorted(pids)


def write_spec(args, work):
    check = [os.path.join(args.build_dir, "tests/rd_worker_check"), "--colls", "allreduce",
             "--counts", str(args.mib * 262144), "--dtypes", "float32", "--ops", "sum",
             "--iters", str(args.ops // 2), "--announce-after", str(args.kill_after),
             "--call-times", os.path.join(work, "times-%r.txt")]
    extra = {"resources": {"nicGbps": args.nic_gbps}} if args.nic_gbps else {}
    spec = {"displayName": "failover-readmission", "baseOutputDirectory": work,
            "scheduling": {"timeout": "600s"}, "libreduce": {"heartbeat_ms": 1000},
            "workerPoolSpecs": [dict({"replicaCount": 1, "command": check}, **extra),
                                dict({"replicaCount": args.ranks - 1, "command": check}, **extra),
                                dict({"replicaCount": args.reducers}, **extra)]}
    path = os.path.join(work, "job.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


def run_job(args, work):
    """Runs the job, kills reducer-1 on cue; returns (job record, reducectl's output)."""
    job_id = "readmission-" + uuid.uuid4().hex[:8]
    cmd = [os.path.join(args.build_dir, "src/reducectl"), "run", write_spec(args, work),
           "--job-id", job_id]
    if args.nic_gbps:
        cmd.append("--emulate-network")
    cue = "worker 0: %d operations done" % args.kill_after
    out = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
        for line in p.stdout:
            out.append(line)
            if cue in line:
                os.kill(reducer_pids(job_id)[1], signal.SIGKILL)
        p.wait(timeout=60)
    text = "".join(out)
    if p.returncode != 0:
        sys.exit("the job failed:\n" + text)
    with open(os.path.join(work, job_id, "reducectl/job.json")) as f:
        return json.load(f), text


def summarize(args, work, record):
    [failover] = record["failovers"]
    first = failover["readmittedFromOperation"]
    if first < 0:
        sys.exit("the replacement was not re-admitted before the job ended: raise --ops")
    rows = []
    for rank in range(args.ranks):
        with open(os.path.join(work, "times-%d.txt" % rank)) as f:
            times = [float(line) for line in f if line.strip()]
        before = statistics.median(times[:args.kill_after])
        during = statistics.median(times[args.kill_after:first]) if first > args.kill_after else 0
        after = statistics.median(times[first + 10:])
        rows.append({"rank": rank, "before_ms": before, "degraded_ms": during, "after_ms": after,
                     "after_over_before": after / before})
    return {"failover": failover, "ranks": rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--reducers", type=int, default=3)
    parser.add_argument("--mib", type=int, default=1, help="all-reduce size in MiB")
    parser.add_argument("--ops", type=int, default=400, help="all-reduces per rank (even)")
    parser.add_argument("--kill-after", type=int, default=100)
    parser.add_argument("--nic-gbps", type=float, help="emulated NIC rate of every replica")
    parser.add_argument("--out", help="directory for results.json (default: print only)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="readmission-") as work:
        record, _ = run_job(args, work)
        result = summarize(args, work, record)
    result["setup"] = vars(args)
    print("failover: %s" % json.dumps(result["failover"]))
    print("rank  before_ms  after_kill_ms  after_readmission_ms  after/before")
    for r in result["ranks"]:
        print("%4d  %9.2f  %13.2f  %20.2f  %12.3f" % (r["rank"], r["before_ms"], r["degraded_ms"],
                                                      r["after_ms"], r["after_over_before"]))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
