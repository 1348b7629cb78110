#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The scale model (src/orchestrator/scale_model.h, `reducectl plan --bucket`) against every
measured point it is calibrated for, and the constants those points fit.

Points (each all-reduce's median out-of-place time, every result verified when measured):
  - one host, loopback (shared memory): bench/results/scale-ranks-2026-12-07, 16-256 ranks;
  - the emulated cluster (TCP between network namespaces on this 2-core host): every rs and
    ring point of the bench/results/cluster-* runs since UCX's receive segment was fitted to
    eager messages (f835f8d, 2026-12-05); earlier runs measured code since changed.

For each point `reducectl plan --json` gives the prediction and the work it counts; the script
prints measured against predicted with the error, fits the CPU costs per transport (least
squares on relative error over the points where CPU, not the links, bounds the time) and the
link efficiency (the points where the links do), and writes OUT/check.md, OUT/points.json and
OUT/predicted-vs-n.png (rs and ring against n to 8192 for --plot-gbps NICs and --plot-bucket
buffers, with the reducers the plan recommends).

  model_check.py --build-dir build --out DIR
"""
from __future__ import annotations

import argparse
import datetime
import glob
import json
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench/results"
CLUSTER_SINCE = "2026-12-05"  # f835f8d: UCX's receive segment fitted to eager messages
LOOPBACK_GBPS = 26  # TCP loopback on this machine (shared/reference): unused, loopback is CPU


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", type=Path, default=ROOT / "build")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--plot-gbps", type=float, default=1)
    p.add_argument("--plot-bucket", default="25M")
    return p.parse_args(argv)


def plan(args, *flags) -> dict:
    cmd = [str(args.build_dir / "src/reducectl"), "plan", "--json", *map(str, flags)]
    run = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


def loopback_points() -> list[dict]:
    data = json.loads((RESULTS / "scale-ranks-2026-12-07/results.json").read_text())
    points = []
    for r in data["rows"]:
        for algo in ("rs", "ring"):
            points.append({"source": "scale-ranks-2026-12-07", "transport": "shared_memory",
                           "n": r["n"], "k": r["reducers"], "gbps": LOOPBACK_GBPS,
                           "bytes": r["size"], "algo": algo, "seconds": r[algo + "_us"] / 1e6})
    for r in data["reducer_sweep"]:
        points.append({"source": "scale-ranks-2026-12-07 (reducers)", "transport": "shared_memory",
                       "n": r["n"], "k": r["reducers"], "gbps": LOOPBACK_GBPS, "bytes": r["size"],
                       "algo": "rs", "seconds": r["rs_us"] / 1e6})
    return points


def cluster_points() -> list[dict]:
    """Medians over repeats of each (scenario, algo, size) of the cluster runs since f835f8d."""
    grouped: dict[tuple, list[float]] = {}
    meta = {}
    for path in sorted(glob.glob(str(RESULTS / "cluster-*/**/results.json"), recursive=True)):
        source = Path(path).relative_to(RESULTS).parent
        if source.parts[0][len("cluster-"):len("cluster-") + 10] < CLUSTER_SINCE:
            continue
        data = json.loads(Path(path).read_text())
        scenarios = {s["label"]: s for s in data["scenarios"]}
        for r in data["results"]:
            if r["placement"] != "out_of_place" or r["system"] not in ("rs", "ring"):
                continue
            s = scenarios[r["scenario"]]
            # An uncapped link is the veth's own rate, as probed.
            gbps = s["rate_bps"] / 1e9 if s.get("rate_bps") else s["probe"]["bps"] / 1e9
            key = (str(source), r["scenario"], s["n"], s["k"], gbps, r["system"], r["size"])
            grouped.setdefault(key, []).append(r["time_us"] / 1e6)
            meta[key] = s["rate"]
    return [{"source": f"{src} {label}", "transport": "tcp", "n": n, "k": k, "gbps": gbps,
             "bytes": size, "algo": algo, "seconds": statistics.median(times)}
            for (src, label, n, k, gbps, algo, size), times in grouped.items()]


def predict(args, p: dict) -> dict:
    flags = ["--workers", p["n"], "--reducers", p["k"], "--worker-gbps", p["gbps"],
             "--bucket", p["bytes"], "--one-host", 2]
    if p["transport"] == "shared_memory":
        flags.append("--loopback")
    return plan(args, *flags)[p["algo"]]


def fit_cpu(points: list[dict]) -> tuple[list[float], int]:
    """Per-transfer-end, per-byte and per-operation seconds fitted on the CPU-bound points."""
    bound = [p for p in points if p["pred"]["limit"] == "host CPU"
             or p["seconds"] > 1.5 * p["pred"]["link_s"]]
    if len(bound) < 3:
        return [], len(bound)
    a = np.array([[p["pred"]["host_per_core"][f] / p["seconds"]
                   for f in ("transfer_ends", "bytes", "operations")] for p in bound])
    y = np.array([(p["seconds"] - p["pred"]["latency_s"]) / p["seconds"] for p in bound])
    keep = [0, 1, 2]
    while True:  # least squares, dropping terms that come out negative
        c, *_ = np.linalg.lstsq(a[:, keep], y, rcond=None)
        if (c >= 0).all():
            break
        keep.pop(int(np.argmin(c)))
    full = [0.0, 0.0, 0.0]
    for i, v in zip(keep, c):
        full[i] = float(v)
    return full, len(bound)


def fit_efficiency(points: list[dict]) -> float | None:
    """Payload rate over nominal, from the points the links bound (time well above the CPU's)."""
    ratios = [p["pred"]["link_s"] * p["efficiency_used"] / (p["seconds"] - p["pred"]["latency_s"])
              for p in points if p["pred"]["link_s"] > 2 * p["pred"]["cpu_s"]]
    return statistics.median(ratios) if ratios else None


def plot(args, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ns = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for bucket, style in ((args.plot_bucket, "-"), ("256K", "--")):
        rs, ring = [], []
        for n in ns:
            got = plan(args, "--workers", n, "--worker-gbps", args.plot_gbps, "--bucket", bucket)
            rs.append(got["rs"]["seconds"] * 1e3)
            ring.append(got["ring"]["seconds"] * 1e3)
        ax.plot(ns, rs, "o" + style, label=f"rs, {bucket} (reducers: the plan's)")
        ax.plot(ns, ring, "s" + style, label=f"ring, {bucket}")
    ax.set(xscale="log", yscale="log", xlabel="workers (one per host)", ylabel="ms per all-reduce",
           title=f"predicted all-reduce time, {args.plot_gbps:g} Gbit/s NICs, TCP")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv):
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    points = loopback_points() + cluster_points()
    efficiency = plan(args, "--workers", 2, "--worker-gbps", 1, "--bucket", "1M").get(
        "link_efficiency")
    for p in points:
        p["pred"] = predict(args, p)
        p["efficiency_used"] = efficiency or 1.0
        p["error"] = p["pred"]["seconds"] / p["seconds"] - 1
    lines = [f"Checked {datetime.date.today()} with `bench/scale/model_check.py "
             f"{' '.join(argv)}`.", "",
             "| source | transport | n | k | Gbit/s | bytes | algo | measured (ms) | "
             "predicted (ms) | error | bound |", "|" + "---|" * 11]
    for p in points:
        lines.append(f"| {p['source']} | {p['transport']} | {p['n']} | {p['k']} | "
                     f"{p['gbps']:g} | {p['bytes']} | {p['algo']} | {p['seconds'] * 1e3:.3g} | "
                     f"{p['pred']['seconds'] * 1e3:.3g} | {100 * p['error']:+.0f}% | "
                     f"{p['pred']['limit']} |")
    lines += ["", "| points | count | median abs error | largest abs error |", "|---|---|---|---|"]
    for name, group in (("all", points),
                        ("one host, shared memory", [p for p in points
                                                     if p["transport"] == "shared_memory"]),
                        ("emulated cluster, TCP", [p for p in points if p["transport"] == "tcp"])):
        errors = [abs(p["error"]) for p in group]
        if errors:
            lines.append(f"| {name} | {len(errors)} | {100 * statistics.median(errors):.0f}% | "
                         f"{100 * max(errors):.0f}% |")
    lines += ["", "Fitted on these points (the model's constants are in "
              "src/orchestrator/scale_model.cc):", ""]
    for transport in ("shared_memory", "tcp"):
        costs, used = fit_cpu([p for p in points if p["transport"] == transport])
        if costs:
            lines.append(f"- {transport}: per transfer end {costs[0] * 1e6:.3g} us, per byte "
                         f"{costs[1] * 1e9:.3g} ns, per operation {costs[2] * 1e6:.3g} us "
                         f"({used} CPU-bound points)")
    eff = fit_efficiency([p for p in points if p["transport"] == "tcp"])
    if eff:
        lines.append(f"- link efficiency {eff:.3f} (points bound by their links)")
    (args.out / "check.md").write_text("\n".join(lines) + "\n")
    (args.out / "points.json").write_text(json.dumps(points, indent=1) + "\n")
    plot(args, args.out / "predicted-vs-n.png")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:])
