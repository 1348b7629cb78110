#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""One reducer's ingest rate: how many bytes per second a single reduce-server absorbs and
sends back, with 1 or more network lanes (--lanes) and reduction threads (--threads).

N rd_perf ranks all-reduce through ONE reducer process over loopback, uncapped, so the
reducer's CPU is the limit (rs through a single reducer: it receives N x S and sends N x S per
operation). Configurations run interleaved, --repeats times each; the table gives medians:

  ingest = N x size / time          reducer CPU-s per GB ingested (its own getrusage at exit)

  ingest.py --build-dir build --ranks 4 --size 64M --configs 1x1,2x1,1x2,2x2 --out DIR

A configuration LxT is L lanes and T reduction threads. Every result is verified (rd_perf -c 1,
#wrong must be 0). Processes are killed at the end, also on failure; each run has a deadline.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

READY_TIMEOUT_S = 20
BASE_PORT = 27000


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", type=Path, default=Path("build"))
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--size", default="64M")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--configs", default="1x1,2x1,1x2,2x2",
                   help="comma list of LANESxTHREADS")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args(argv)


def size_bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def start_reducer(build: Path, lanes: int, threads: int, work: Path):
    ready = work / "ready"
    log = open(work / "reducer.log", "wb")
    proc = subprocess.Popen([str(build / "src/reduce-server"), "--listen", "127.0.0.1:0",
                             "--lanes", str(lanes), "--threads", str(threads),
                             "--ready-file", str(ready)],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if ready.exists():
            match = re.search(r"address=(\S+)", ready.read_text())
            if match:
                return proc, match.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"reducer not ready: {(work / 'reducer.log').read_text()[-400:]}")


def run_once(args, lanes: int, threads: int, index: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="rd-ingest-") as tmp:
        work = Path(tmp)
        reducer, addresses = start_reducer(args.build_dir, lanes, threads, work)
        ranks = []
        try:
            json_path = work / "rank0.json"
            for rank in range(args.ranks):
                env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.ranks),
                           MASTER_ADDR="127.0.0.1", MASTER_PORT=str(BASE_PORT + 10 * index),
                           LIBREDUCE_COMM_ID=f"ingest-{os.getpid()}-{index}")
                argv = [str(args.build_dir / "bench/rd_perf"), "--algo", "rs", "--reducers",
                        addresses, "-b", args.size, "-e", args.size, "-n", str(args.iters),
                        "-w", str(args.warmup), "-c", "1", "-J", str(json_path)]
                ranks.append(subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.PIPE, start_new_session=True))
            deadline = time.monotonic() + args.timeout
            for proc in ranks:
                proc.wait(timeout=max(1, deadline - time.monotonic()))
            if any(p.returncode != 0 for p in ranks):
                raise RuntimeError("a rank failed: " + ranks[0].stderr.read().decode()[-400:])
            doc = json.loads(json_path.read_text())
        finally:
            for proc in ranks:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            reducer.send_signal(signal.SIGTERM)
            try:
                reducer.wait(timeout=10)
            except subprocess.TimeoutExpired:
                reducer.kill()
                reducer.wait()
        cpu = re.search(r"user_s=([0-9.]+) sys_s=([0-9.]+)", (work / "reducer.log").read_text())
    result = doc["results"][0]
    size = result["size"]
    times = [result[p]["time_us"] for p in ("out_of_place", "in_place")]
    wrong = sum(int(result[p]["wrong"]) for p in ("out_of_place", "in_place"))
    calls = 2 * (args.iters + args.warmup + 1)
    ingested = args.ranks * size * calls
    return {"lanes": lanes, "threads": threads, "size": size, "time_us": statistics.mean(times),
            "ingest_gbps": args.ranks * size / (statistics.mean(times) * 1e-6) / 1e9,
            "reducer_cpu_s": float(cpu.group(1)) + float(cpu.group(2)) if cpu else None,
            "reducer_cpu_per_gb": (float(cpu.group(1)) + float(cpu.group(2))) / (ingested / 1e9)
            if cpu else None, "wrong": wrong}


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    configs = [tuple(int(x) for x in c.split("x")) for c in args.configs.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    runs, index = [], 0
    for repeat in range(args.repeats):
        for lanes, threads in configs:
            run = run_once(args, lanes, threads, index)
            run["repeat"] = repeat
            runs.append(run)
            index += 1
            print(f"lanes {lanes} threads {threads}: {run['ingest_gbps']:.3f} GB/s ingested, "
                  f"#wrong {run['wrong']}", flush=True)
    lines = [f"# One reducer's ingest rate, {datetime.date.today()}", "",
             f"`{' '.join([sys.executable] + sys.argv)}`", "",
             f"{args.ranks} ranks all-reduce {args.size} through one reduce-server over loopback "
             f"(uncapped; the reducer's CPU is the limit); medians of {args.repeats} interleaved "
             "repeats.", "",
             "| lanes | threads | ingest (GB/s) | reducer CPU-s per GB ingested | #wrong |",
             "|---|---|---|---|---|"]
    for lanes, threads in configs:
        mine = [r for r in runs if r["lanes"] == lanes and r["threads"] == threads]
        cpu = [r["reducer_cpu_per_gb"] for r in mine if r["reducer_cpu_per_gb"] is not None]
        lines.append(f"| {lanes} | {threads} | "
                     f"{statistics.median(r['ingest_gbps'] for r in mine):.3f} | "
                     f"{statistics.median(cpu):.2f} | {sum(r['wrong'] for r in mine)} |"
                     if cpu else f"| {lanes} | {threads} | — | — | — |")
    (args.out / "ingest.md").write_text("\n".join(lines) + "\n")
    (args.out / "ingest.json").write_text(json.dumps(runs, indent=1) + "\n")
    print("\n".join(lines))
    return 1 if any(r["wrong"] for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
