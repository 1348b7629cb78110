#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""All-reduce time against the number of ranks on this machine: rs, ring and auto, every result
verified, through `reducectl launch` (ranks and reducers on this host's cores).

For each n of --ranks:
  - one job compares rs and ring in the same processes (rd_perf --algo rs,ring, -w --warmup);
  - one job per size compares auto with rs (rd_perf --algo auto,rs) after the warm-up auto
    needs to finish measuring that size (6 runs of up to 64 calls, docs/benchmarks.md), so
    that auto's figure is its choice's, not its trials'.
Then, at the largest n (or --at N), one rs job per reducer count of --reducer-counts, and one per collective
of --collectives (reduce-scatter, all-gather, broadcast: through the reducers).

Writes OUT/table.md (the command, date and commit, the tables), OUT/results.json and every
job's rd_perf JSON and logs under OUT/jobs/.

  ranks_table.py --build-dir build --ranks 16,32,64,128,256 --sizes 4K,64K,1M \\
      --reducer-counts 2,4,8,16 --out DIR
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

# Calls of auto's trials for a size: 6 runs of max(1, min(64, 2 MiB / size)) calls, then the
# two calls that decide (src/collectives/algorithms/auto_tuner.h).
AUTO_RUNS, AUTO_RUN_BYTES, AUTO_MAX_CALLS = 6, 2 << 20, 64


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def auto_warmup(size: int) -> int:
    return AUTO_RUNS * max(1, min(AUTO_MAX_CALLS, AUTO_RUN_BYTES // size)) + 2


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", type=Path, default=Path("build"))
    p.add_argument("--ranks", default="16,32,64,128,256")
    p.add_argument("--reducers", type=int, default=2)
    p.add_argument("--sizes", default="4K,64K,1M")
    p.add_argument("--reducer-counts", default="2,4,8,16", help="at the largest n, rs only")
    p.add_argument("--collectives", default="reducescatter,allgather,broadcast",
                   help="at the largest n, through --reducers reducers")
    p.add_argument("--at", type=int, default=0,
                   help="the ranks of the reducer and collective sweeps (default: the largest "
                        "of --ranks; with --ranks '' only the sweeps run)")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--timeout", type=int, default=1800)
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args(argv)


def rd_perf_job(args, name: str, ranks: int, reducers: int, perf_args: list[str]) -> list[dict]:
    """Runs one rd_perf job; returns its JSON results. Raises when it fails or finds a wrong
    value."""
    jobs = args.out / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    json_path = jobs / (name + ".json")
    cmd = [str(args.build_dir / "src/reducectl"), "launch", "--quiet", "--workers", str(ranks),
           "--reducers", str(reducers), "--timeout", str(args.timeout), "--job-id", name,
           "--output-dir", str(jobs), "--", str(args.build_dir / "bench/rd_perf"), *perf_args,
           "-n", str(args.iters), "-J", str(json_path)]
    print("+ " + " ".join(cmd), flush=True)
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout + 120)
    if run.returncode != 0:
        raise SystemExit(f"{name}: exit {run.returncode}\n{run.stderr[-2000:]}")
    results = json.loads(json_path.read_text())["results"]
    wrong = [r for r in results
             if any(r.get(placement, {}).get("wrong", 0) != 0
                    for placement in ("out_of_place", "in_place"))]
    if wrong:
        raise SystemExit(f"{name}: wrong results: {wrong}")
    return results


def figures(results: list[dict]) -> dict[tuple[str, int], float]:
    """{(algorithm, size): out-of-place time in us} of a compare run (rd_perf --algo A,B)."""
    return {(r["system"].removeprefix("libreduce ").split(",")[0], r["size"]):
            r["out_of_place"]["time_us"] for r in results}


def size_step(sizes: list[int]) -> int:
    """rd_perf's -f for the sweep of @sizes: they must grow by one whole factor each step."""
    if len(sizes) == 1:
        return 2
    step = sizes[1] // sizes[0]
    if step < 2 or any(b != a * step for a, b in zip(sizes, sizes[1:])):
        raise SystemExit(f"--sizes must grow by one whole factor of 2 or more, got {sizes}")
    return step


def measure(args) -> dict:
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    step = str(size_step(sizes))
    ranks = [int(n) for n in args.ranks.split(",") if n]
    at = args.at or max(ranks, default=0)
    if not at:
        raise SystemExit("--at N (or --ranks) says how many ranks the sweeps run with")
    rows = []
    for n in ranks:
        got = figures(rd_perf_job(args, f"n{n}-rs-ring", n, args.reducers, [
            "--algo", "rs,ring", "-b", str(min(sizes)), "-e", str(max(sizes)), "-f",
            step, "-w", str(args.warmup),
            "--rounds", str(args.rounds)]))
        for size in sizes:
            auto = figures(rd_perf_job(args, f"n{n}-auto-{size}", n, args.reducers, [
                "--algo", "auto,rs", "-b", str(size), "-e", str(size),
                "-w", str(auto_warmup(size)), "--rounds", str(args.rounds)]))
            rows.append({"n": n, "reducers": args.reducers, "size": size,
                         "rs_us": got[("rs", size)], "ring_us": got[("ring", size)],
                         "auto_us": auto[("auto", size)], "rs_beside_auto_us": auto[("rs", size)]})
            print(json.dumps(rows[-1]), flush=True)
    sweep = []
    for k in [int(k) for k in args.reducer_counts.split(",") if k]:
        n = at
        results = rd_perf_job(args, f"n{n}-k{k}-rs", n, k, [
            "--algo", "rs", "-b", str(min(sizes)), "-e", str(max(sizes)), "-f",
            step, "-w", str(args.warmup)])
        for r in results:
            sweep.append({"n": n, "reducers": k, "size": r["size"],
                          "rs_us": r["out_of_place"]["time_us"]})
            print(json.dumps(sweep[-1]), flush=True)
    collectives = []
    for coll in [c for c in args.collectives.split(",") if c]:
        n = at
        results = rd_perf_job(args, f"n{n}-{coll}", n, args.reducers, [
            "--coll", coll, "-b", str(min(sizes)), "-e", str(max(sizes)), "-f",
            step, "-w", str(args.warmup)])
        for r in results:
            collectives.append({"n": n, "reducers": args.reducers, "coll": coll,
                                "size": r["size"], "us": r["out_of_place"]["time_us"]})
            print(json.dumps(collectives[-1]), flush=True)
    return {"rows": rows, "reducer_sweep": sweep, "collectives": collectives}


def size_text(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def write_table(args, data: dict, argv: list[str]) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    lines = [f"Measured {datetime.date.today()} at {commit} on this machine "
             f"(loopback, ranks and reducers sharing its cores):", "",
             "```sh", "bench/scale/ranks_table.py " + " ".join(argv), "```", "",
             "Times are medians of the rounds' per-call times (ms), out of place, every result "
             "verified (0 wrong)."]
    if data["rows"]:
        lines += ["rs and ring ran in the same processes; auto beside rs in another job, after "
                  "its trials (the last column: auto's time over that rs's).", "",
                  "| n | size | rs (ms) | ring (ms) | ring / rs | auto (ms) | auto / rs beside it |",
                  "|---|---|---|---|---|---|---|"]
    for r in data["rows"]:
        lines.append(f"| {r['n']} | {size_text(r['size'])} | {r['rs_us'] / 1e3:.2f} | "
                     f"{r['ring_us'] / 1e3:.2f} | {r['ring_us'] / r['rs_us']:.1f}x | "
                     f"{r['auto_us'] / 1e3:.2f} | {r['auto_us'] / r['rs_beside_auto_us']:.2f} |")
    if data["reducer_sweep"]:
        lines += ["", "rs through more reducers (one job each, same n):", "",
                  "| n | reducers | size | rs (ms) |", "|---|---|---|---|"]
        for r in data["reducer_sweep"]:
            lines.append(f"| {r['n']} | {r['reducers']} | {size_text(r['size'])} | "
                         f"{r['rs_us'] / 1e3:.2f} |")
    if data.get("collectives"):
        lines += ["", "The other collectives through the reducers (one job each):", "",
                  "| n | reducers | collective | size | time (ms) |", "|---|---|---|---|---|"]
        for r in data["collectives"]:
            lines.append(f"| {r['n']} | {r['reducers']} | {r['coll']} | {size_text(r['size'])} | "
                         f"{r['us'] / 1e3:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv):
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    data = measure(args)
    (args.out / "results.json").write_text(json.dumps(data, indent=1) + "\n")
    table = write_table(args, data, argv)
    (args.out / "table.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main(sys.argv[1:])
