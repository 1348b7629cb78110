#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Latency of all-reduce against size on this machine (loopback), rs and ring side by side.

Each repeat runs rd_perf under `reducectl launch` once per algorithm (interleaved), every
result verified (#wrong must be 0); the table gives, per size, the median over repeats of each
run's out-of-place time, the step from the size before (no step should be a cliff: at most 2x
for twice the bytes), and rs / ring. A PNG plots the curves.

  latency_sweep.py --build-dir build --ranks 4 --reducers 2 -b 4K -e 4M --iters 50 \
      --repeats 5 --out DIR

An entry of --algos may carry settings for its runs after '@': `rs@LIBREDUCE_FAILOVER=0` is rs
without failover's release round (several settings: `@A=1@B=2`). An entry may also name another
build after '#': `rs#/tmp/base/build` is rs as built there (an earlier commit, side by side).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", type=Path, default=Path("build"))
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--reducers", type=int, default=2)
    p.add_argument("-b", "--minbytes", default="4K")
    p.add_argument("-e", "--maxbytes", default="4M")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--algos", default="rs,ring")
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args(argv)


def run(args, spec: str) -> dict[int, float]:
    """{size: out-of-place time (us)} of one rd_perf run of `algo[@SETTING=VALUE...]`; raises on
    failure or wrong results."""
    algo, *settings = spec.split("@")
    algo, _, other_build = algo.partition("#")
    build_dir = Path(other_build) if other_build else args.build_dir
    env = dict(os.environ, **dict(s.split("=", 1) for s in settings))
    with tempfile.TemporaryDirectory(prefix="rd-latency-") as tmp:
        json_path = Path(tmp) / "rank0.json"
        cmd = [str(build_dir / "src/reducectl"), "launch", "--quiet",
               "--workers", str(args.ranks), "--reducers", str(args.reducers), "--algo", algo,
               "--timeout", str(args.timeout), "--output-dir", tmp, "--",
               str(build_dir / "bench/rd_perf"), "-b", args.minbytes, "-e", args.maxbytes,
               "-f", "2", "-n", str(args.iters), "-w", str(args.warmup), "-c", "1",
               "-J", str(json_path)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout + 60,
                              check=False, env=env)
        if done.returncode != 0 or not json_path.exists():
            raise RuntimeError(f"{algo}: reducectl exited {done.returncode}: "
                               f"{done.stdout[-500:]} {done.stderr[-500:]}")
        doc = json.loads(json_path.read_text())
    wrong = sum(int(r[p]["wrong"]) for r in doc["results"] for p in ("out_of_place", "in_place"))
    if wrong:
        raise RuntimeError(f"{algo}: {wrong} wrong elements")
    return {int(r["size"]): float(r["out_of_place"]["time_us"]) for r in doc["results"]}


def size_label(size: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def write_plot(path: Path, medians: dict[str, dict[int, float]], title: str) -> bool:
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for algo, by_size in medians.items():
        sizes = sorted(by_size)
        ax.plot(sizes, [by_size[s] for s in sizes], marker="o", label=algo)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("time per all-reduce (us, median)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    algos = [a for a in args.algos.split(",") if a]
    samples: dict[str, list[dict[int, float]]] = {a: [] for a in algos}
    for repeat in range(args.repeats):
        for algo in algos:
            samples[algo].append(run(args, algo))
            print(f"repeat {repeat} {algo}: done", flush=True)
    medians = {a: {s: statistics.median(r[s] for r in runs) for s in runs[0]}
               for a, runs in samples.items()}
    sizes = sorted(next(iter(medians.values())))
    head = ["size"] + [f"{a} (us)" for a in algos] + [f"{a} step" for a in algos]
    if "rs" in algos and "ring" in algos:
        head.append("rs/ring")
    lines = [f"# All-reduce latency on this machine, {datetime.date.today()}", "",
             f"`{' '.join(['/usr/bin/python3'] + [sys.argv[0]] + sys.argv[1:])}`", "",
             f"{args.ranks} ranks, {args.reducers} reducers, loopback (UCX over TCP on lo), "
             f"rd_perf -n {args.iters} -w {args.warmup}, out-of-place time, median of "
             f"{args.repeats} runs per algorithm (interleaved); step = time / time of the size "
             "before (twice the bytes). Every result verified: #wrong 0.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, size in enumerate(sizes):
        cells = [size_label(size)] + [f"{medians[a][size]:.1f}" for a in algos]
        for a in algos:
            cells.append("—" if i == 0 else f"{medians[a][size] / medians[a][sizes[i - 1]]:.2f}")
        if "rs/ring" in head:
            cells.append(f"{medians['rs'][size] / medians['ring'][size]:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    args.out.mkdir(parents=True, exist_ok=True)
    if write_plot(args.out / "latency.png", medians,
                  f"all-reduce latency, {args.ranks} ranks, {args.reducers} reducers, loopback"):
        lines += ["", "![latency](latency.png)"]
    (args.out / "latency.md").write_text("\n".join(lines) + "\n")
    (args.out / "latency.json").write_text(json.dumps(samples, indent=1) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
