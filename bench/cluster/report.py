# SPDX-License-Identifier: BSD-3-Clause
"""Results of the emulated-cluster benchmark: the cost model, CSV / JSON / markdown, and plots.

Every measurement is a flat row (scenario, system, n, k, rate, size, placement, time, algbw,
busbw, #wrong, ...). The tables compare the systems measured in the same topology, with the
ratios of reduction server (rs) over each peer next to what the link-bound cost model predicts
(/work/shared/reference/performance.md):

    ring_time = 2(n-1)/n * S/B          rs_time = S * max(1/B, n/(k*Br))

with every host capped at the same rate, Br = B, so the predicted speed-up ring_time/rs_time
depends on n and k only: 2(n-1)/n once k >= n. The ring's cost is the lower bound for any
algorithm that moves data among the workers only, so it is also the best Gloo or MPI can do on
large messages: the same prediction holds for rs/gloo and rs/mpi where they reach that bound
(and the measured ratio is higher where they do not).
"""
from __future__ import annotations

import csv
import json
import statistics
from collections import defaultdict
from pathlib import Path

ROW_FIELDS = ["scenario", "repeat", "system", "n", "k", "rate", "coll", "size", "count", "dtype",
              "redop", "placement", "time_us", "algbw", "busbw", "cpu_us", "wrong"]
SYSTEM_ORDER = ["rs", "rs-bf16", "rs-fp16", "auto", "ring", "gloo", "mpi"]
COMPRESSED = ["rs-bf16", "rs-fp16"]  # rs with float32 on the wire as two-byte values
PEERS = ["ring", "gloo", "mpi"]
HEADLINE_PLACEMENT = "out_of_place"


# -- the model ----------------------------------------------------------------------------------

def model_ring_time(n: int, size: float, bw: float) -> float:
    """Seconds of ring all-reduce on links of bw bytes/s (bandwidth term only)."""
    return 2 * (n - 1) / n * size / bw if n > 1 else 0.0


def model_rs_time(n: int, k: int, size: float, bw: float, reducer_bw: float | None = None) -> float:
    """Seconds of reduction-server all-reduce: worker link or total reducer bandwidth bound."""
    reducer_bw = bw if reducer_bw is None else reducer_bw
    return size * max(1 / bw, n / (k * reducer_bw))


def model_speedup(n: int, k: int) -> float | None:
    """Predicted ring_time / rs_time when workers and reducers have the same link rate."""
    if n < 2 or k < 1:
        return None
    return model_ring_time(n, 1.0, 1.0) / model_rs_time(n, k, 1.0, 1.0)


def model_algbw(system: str, n: int, k: int, rate_bps: float | None) -> float | None:
    """Predicted algbw (GB/s) of rs or ring on links of rate_bps; None when uncapped."""
    if rate_bps is None or n < 2:
        return None
    bw = rate_bps / 8
    if system == "rs":
        return 1 / model_rs_time(n, k, 1.0, bw) / 1e9
    return 1 / model_ring_time(n, 1.0, bw) / 1e9


# -- rows ---------------------------------------------------------------------------------------

def rows_from_perf_json(doc: dict, base: dict) -> list[dict]:
    """Flattens one nccl-tests style JSON document ({"results": [...]}) into rows."""
    rows = []
    for result in doc.get("results", []):
        # rd_perf --algo A,B,...: each result names its algorithm; the first's carries vs_best.
        system = base["system"]
        if "system" in result:
            system += ":" + result["system"].removeprefix("libreduce ")
        for placement in ("out_of_place", "in_place"):
            figures = result.get(placement)
            if not figures:
                continue
            rows.append({**base,
                         "system": system,
                         "vs_best": result.get("vs_best"),
                         "round_us": figures.get("round_us"),
                         "coll": result.get("coll", "allreduce"),
                         "size": int(result["size"]),
                         "count": result.get("count"),
                         "dtype": result.get("type"),
                         "redop": result.get("redop"),
                         "placement": placement,
                         "time_us": figures.get("time_us"),
                         "algbw": figures.get("algbw"),
                         "busbw": figures.get("busbw"),
                         "cpu_us": figures.get("cpu_us"),
                         "wrong": figures.get("wrong")})
    return rows


def _median_by(rows: list[dict], field: str, placement: str = HEADLINE_PLACEMENT) -> dict:
    """{(system, size): median of field over repeats} for one placement."""
    groups = defaultdict(list)
    for row in rows:
        if row["placement"] == placement and row.get(field) is not None:
            groups[(row["system"], row["size"])].append(float(row[field]))
    return {key: statistics.median(values) for key, values in groups.items()}


# -- files --------------------------------------------------------------------------------------

def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=ROW_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def write_json(path: Path, scenarios: list[dict], runs: list[dict], rows: list[dict]) -> None:
    with open(path, "w") as out:
        json.dump({"scenarios": scenarios, "runs": runs, "results": rows}, out, indent=1)
        out.write("\n")


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _fmt_bw(value: float | None) -> str:
    """GB/s with four significant digits down to links of 100 Mbit/s."""
    return _fmt(value, 4 if value is not None and value < 0.1 else 3)


def line_rate(scenario: dict) -> float | None:
    """The probed link rate in GB/s (one TCP stream, what a protocol can reach), or None."""
    probe = scenario.get("probe") or {}
    return probe["bps"] / 8 / 1e9 if probe.get("bps") else None


def _size_label(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def _systems_in(rows: list[dict]) -> list[str]:
    present = {row["system"] for row in rows}
    return [s for s in SYSTEM_ORDER if s in present] + sorted(present - set(SYSTEM_ORDER))


def scenario_markdown(scenario: dict, runs: list[dict], rows: list[dict]) -> str:
    """Tables for one scenario: algbw and ratios per size, busbw, latency, #wrong, failures."""
    n, k, rate_bps = scenario["n"], scenario["k"], scenario.get("rate_bps")
    lines = [f"## {scenario['label']}: {n} workers, {k} reducers, links {scenario['rate']}", ""]
    lines += _scenario_preamble(scenario)
    systems = _systems_in(rows)
    if not systems:
        lines += ["No measurements.", ""]
    else:
        lines += _algbw_table(rows, systems, n, k, rate_bps, line_rate(scenario))
        lines += _auto_table(rows, systems)
        lines += _same_process_table(rows)
        lines += _compression_table(rows, systems)
        lines += _busbw_table(rows, systems)
        lines += _cpu_table(rows, runs, systems, n)
        lines += _latency_and_wrong(rows, systems)
    lines += _run_notes(runs)
    return "\n".join(lines)


def _scenario_preamble(scenario: dict) -> list[str]:
    n, k, rate_bps = scenario["n"], scenario["k"], scenario.get("rate_bps")
    lines = []
    probe = scenario.get("probe")
    if probe and probe.get("bps"):
        lines.append(f"Link probe ({probe['path']}, one TCP stream, {probe['seconds']} s): "
                     f"{probe['bps'] / 1e6:.0f} Mbit/s.")
    elif probe and probe.get("error"):
        lines.append(f"Link probe failed: {probe['error']}")
    speedup = model_speedup(n, k)
    if rate_bps is None:
        lines.append("Links uncapped: memory-bound on one machine; the link model does not apply "
                     f"(expect rs at about (n-1)/n = {(n - 1) / n:.2f} of ring).")
    elif speedup is not None:
        lines.append(f"Model (link-bound, reducer links at the same rate): rs algbw "
                     f"{_fmt(model_algbw('rs', n, k, rate_bps))} GB/s, ring algbw "
                     f"{_fmt(model_algbw('ring', n, k, rate_bps))} GB/s, rs/ring {speedup:.2f}; "
                     "the same for rs/gloo and rs/mpi on large messages where those reach the "
                     "ring's bound (any worker-to-worker algorithm's best).")
    return lines + [""]


def _algbw_table(rows, systems, n, k, rate_bps, line=None) -> list[str]:
    algbw = _median_by(rows, "algbw")
    sizes = sorted({size for (_, size) in algbw})
    peers = [p for p in PEERS if p in systems and "rs" in systems]
    speedup = model_speedup(n, k) if rate_bps is not None else None
    head = ["size"] + systems + [f"rs/{p}" for p in peers] + (["model rs/peer"] if peers else [])
    if line and "rs" in systems:
        head.append("rs/line")
    lines = ["algbw (GB/s, out-of-place, median over repeats) and ratios:", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size in sizes:
        cells = [_size_label(size)] + [_fmt_bw(algbw.get((s, size))) for s in systems]
        rs = algbw.get(("rs", size))
        for peer in peers:
            other = algbw.get((peer, size))
            cells.append(_fmt(rs / other, 2) if rs and other else "—")
        if peers:
            cells.append(_fmt(speedup, 2))
        if "rs/line" in head:
            cells.append(_fmt(rs / line, 2) if rs else "—")
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def _auto_table(rows, systems) -> list[str]:
    """auto against the better of rs and ring at each size (auto picks one of them per size)."""
    if not {"auto", "rs", "ring"} <= set(systems):
        return []
    algbw = _median_by(rows, "algbw")
    sizes = sorted(size for (s, size) in algbw if s == "auto")
    lines = ["auto (LIBREDUCE_ALGO=auto) against the better of rs and ring:", "",
             "| size | auto | best | auto/best |", "|---|---|---|---|"]
    for size in sizes:
        rs, ring = algbw.get(("rs", size)), algbw.get(("ring", size))
        best = max((v, name) for v, name in ((rs, "rs"), (ring, "ring")) if v)
        auto = algbw[("auto", size)]
        lines.append(f"| {_size_label(size)} | {_fmt_bw(auto)} | {best[1]} {_fmt_bw(best[0])} | "
                     f"{_fmt(auto / best[0], 2)} |")
    return lines + [""]


def _same_process_table(rows) -> list[str]:
    """auto-same: the first algorithm against the fastest other, measured in the same processes."""
    first = [r for r in rows
             if r.get("vs_best") is not None and r["placement"] == HEADLINE_PLACEMENT]
    if not first:
        return []
    name = first[0]["system"]
    lines = [f"{name} against the fastest other in the same processes (rd_perf --algo with "
             "several: each in its own communicator, interleaved rounds; ratio = the fastest "
             "other's time / its time, of the rounds' medians; 1.00 = as fast):", "",
             "| size | ratio, median over repeats | lowest repeat | highest repeat |",
             "|---|---|---|---|"]
    ratios = defaultdict(list)
    for row in first:
        ratios[row["size"]].append(float(row["vs_best"]))
    for size in sorted(ratios):
        values = ratios[size]
        lines.append(f"| {_size_label(size)} | {_fmt(statistics.median(values), 3)} | "
                     f"{_fmt(min(values), 3)} | {_fmt(max(values), 3)} |")
    return lines + [""]


def _compression_table(rows, systems) -> list[str]:
    """Compressed rs against rs in the same run: half the bytes on the wire (model: 2x)."""
    compressed = [s for s in COMPRESSED if s in systems]
    if "rs" not in systems or not compressed:
        return []
    algbw = _median_by(rows, "algbw")
    sizes = sorted(size for (s, size) in algbw if s == "rs")
    head = ["size", "rs"] + compressed + [f"{s}/rs" for s in compressed]
    lines = ["Wire compression (float32 sent as bf16 / fp16, summed in float32; the link model "
             "gives 2x rs):", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size in sizes:
        rs = algbw.get(("rs", size))
        cells = [_size_label(size), _fmt_bw(rs)] + \
            [_fmt_bw(algbw.get((s, size))) for s in compressed]
        for s in compressed:
            other = algbw.get((s, size))
            cells.append(_fmt(other / rs, 2) if rs and other else "—")
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def reduced_bytes(run: dict) -> float:
    """Bytes each rank all-reduced over the whole run (every call, warm-up and check too)."""
    return float(run.get("reduced_bytes") or 0)


def _cpu_table(rows, runs, systems, n) -> list[str]:
    """CPU seconds per GB all-reduced, from the processes' own accounting."""
    cpu = _median_by(rows, "cpu_us")
    if not cpu:
        return []
    largest = max(size for (_, size) in cpu)
    lines = [f"CPU seconds per GB all-reduced ({_size_label(largest)}): per worker over the timed "
             "calls (getrusage of each rank, mean over ranks); reducers all together over the "
             "whole run (each reducer's getrusage at exit, over every call's bytes); total = n "
             "workers + reducers:", "",
             "| system | algbw (GB/s) | worker CPU-s/GB | reducers CPU-s/GB | total CPU-s/GB |",
             "|---|---|---|---|---|"]
    algbw = _median_by(rows, "algbw")
    for system in systems:
        per_call = cpu.get((system, largest))
        if per_call is None:
            continue
        worker = per_call * 1e-6 / (largest / 1e9)
        reducer = None
        ok = [r for r in runs if r["system"] == system and r.get("reducer_cpu_s") is not None]
        if ok and all(reduced_bytes(r) > 0 for r in ok):
            reducer = statistics.median(r["reducer_cpu_s"] / (reduced_bytes(r) / 1e9) for r in ok)
        total = n * worker + (reducer or 0)
        lines.append(f"| {system} | {_fmt_bw(algbw.get((system, largest)))} | {_fmt(worker, 2)} | "
                     f"{_fmt(reducer, 2)} | {_fmt(total, 2)} |")
    return lines + [""]


def _busbw_table(rows, systems) -> list[str]:
    busbw = _median_by(rows, "busbw")
    if not busbw:
        return []
    sizes = sorted({size for (_, size) in busbw})
    lines = ["busbw (GB/s, out-of-place, nccl-tests convention 2(n-1)/n * algbw):", "",
             "| size | " + " | ".join(systems) + " |", "|" + "---|" * (len(systems) + 1)]
    for size in sizes:
        cells = [_size_label(size)] + [_fmt_bw(busbw.get((s, size))) for s in systems]
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def _latency_and_wrong(rows, systems) -> list[str]:
    smallest = min(row["size"] for row in rows)
    times = defaultdict(list)
    wrong = defaultdict(int)
    for row in rows:
        wrong[row["system"]] += int(row.get("wrong") or 0)
        if row["size"] == smallest and row.get("time_us") is not None:
            times[row["system"]].append(float(row["time_us"]))
    latency = ", ".join(f"{s} {statistics.median(times[s]):.1f} us" for s in systems if times[s])
    wrongs = ", ".join(f"{s} {wrong[s]}" for s in systems)
    return [f"Latency at the smallest size ({_size_label(smallest)}; median over placements and "
            f"repeats): {latency}.", "", f"#wrong: {wrongs}.", ""]


def _run_notes(runs: list[dict]) -> list[str]:
    notes = [f"- {r['system']} (repeat {r['repeat']}): {r['status']}"
             + (f": {r['note']}" if r.get("note") else "") for r in runs
             if r["status"] != "ok" or r.get("note")]
    return (["Runs with notes:", ""] + notes + [""]) if notes else []


def write_markdown(path: Path, title: str, scenarios: list[dict], runs: list[dict],
                   rows: list[dict], plots: list[str]) -> None:
    parts = [f"# {title}", "",
             "algbw = size / time (headline); busbw = algbw * 2(n-1)/n. Every system of a "
             "scenario ran in the same emulated topology (one network namespace per host, "
             "links capped in both directions with tc), one after the other.", ""]
    for scenario in scenarios:
        label = scenario["label"]
        parts.append(scenario_markdown(
            scenario, [r for r in runs if r["scenario"] == label],
            [r for r in rows if r["scenario"] == label]))
    if plots:
        parts += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    path.write_text("\n".join(parts))


# -- plots --------------------------------------------------------------------------------------

def write_plots(out_dir: Path, scenarios: list[dict], rows: list[dict]) -> list[str]:
    """PNG files (names relative to out_dir): algbw vs size per scenario, speed-up vs n."""
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel

    written = []
    for scenario in scenarios:
        subset = [r for r in rows if r["scenario"] == scenario["label"]]
        if subset:
            name = f"algbw-{scenario['label']}.png"
            _plot_algbw(plt, out_dir / name, scenario, subset)
            written.append(name)
    capped = [s for s in scenarios if s.get("rate_bps") is not None]
    if len({s["n"] for s in capped}) > 1:
        _plot_speedup(plt, out_dir / "speedup-vs-n.png", capped, rows)
        written.append("speedup-vs-n.png")
    return written


def _plot_algbw(plt, path: Path, scenario: dict, rows: list[dict]) -> None:
    algbw = _median_by(rows, "algbw")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for system in _systems_in(rows):
        points = sorted((size, bw) for (s, size), bw in algbw.items() if s == system)
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=system)
    for system, style in (("rs", ":"), ("ring", "--")):
        model = model_algbw(system, scenario["n"], scenario["k"], scenario.get("rate_bps"))
        if model:
            ax.axhline(model, linestyle=style, color="grey", linewidth=1,
                       label=f"model {system}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("algbw (GB/s)")
    ax.set_title(f"all-reduce, {scenario['label']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_speedup(plt, path: Path, scenarios: list[dict], rows: list[dict]) -> None:
    """Measured rs/ring and rs/gloo at each scenario's largest size, against 2(n-1)/n."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    n_max = max(s["n"] for s in scenarios)
    xs = list(range(2, n_max + 1))
    ax.plot(xs, [2 * (n - 1) / n for n in xs], color="grey", label="model 2(n-1)/n (k >= n)")
    markers = {"ring": "o", "gloo": "s", "mpi": "^"}
    for peer, marker in markers.items():
        xs_m, ys_m = [], []
        for scenario in scenarios:
            ratio = _largest_size_ratio([r for r in rows if r["scenario"] == scenario["label"]],
                                        peer)
            if ratio is not None:
                xs_m.append(scenario["n"])
                ys_m.append(ratio)
        if xs_m:
            ax.scatter(xs_m, ys_m, marker=marker, label=f"measured rs/{peer}")
    model_points = [(s["n"], model_speedup(s["n"], s["k"])) for s in scenarios]
    ax.scatter([p[0] for p in model_points], [p[1] for p in model_points], marker="x",
               color="black", label="model for the scenario's k")
    ax.axhline(1.0, color="black", linewidth=0.5)
    ax.set_xticks(xs)
    ax.set_xlabel("workers n")
    ax.set_ylabel("speed-up of rs (algbw ratio, largest size)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _largest_size_ratio(rows: list[dict], peer: str) -> float | None:
    algbw = _median_by(rows, "algbw")
    sizes = [size for (s, size) in algbw if s == "rs" and (peer, size) in algbw]
    if not sizes:
        return None
    size = max(sizes)
    peer_bw = algbw[(peer, size)]
    return algbw[("rs", size)] / peer_bw if peer_bw else None
