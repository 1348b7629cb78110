# SPDX-License-Identifier: BSD-3-Clause
"""Draws one operation of a merged timeline (`reducectl trace merge`): a row per rank with its
phases (queued, transfer, finish), then a row per chunk each reducer served for it (gather,
reduce, send), on one time axis from the operation's first post.

    python3 plot_step.py TRACE_JSON OUT_PNG [--op N]

Without --op: the middle one of the largest operations that went through the reducers.
"""

import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

COLORS = {"queued": "#c7c7c7", "transfer": "#1f77b4", "finish": "#2ca02c",
          "gather": "#ff7f0e", "reduce": "#d62728", "send": "#9467bd"}


def pick_op(events):
    ops = [e for e in events if e.get("cat") == "op" and e["args"].get("algorithm") == "RS"]
    if not ops:
        raise SystemExit("no operation through the reducers in this trace")
    largest = max(o["args"]["bytes"] for o in ops)
    numbers = sorted({o["args"]["op"] for o in ops if o["args"]["bytes"] == largest})
    return numbers[len(numbers) // 2]


def rows_of(events, op):
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    order = {e["pid"]: e["args"]["sort_index"] for e in events
             if e.get("name") == "process_sort_index"}
    rows = []  # (label, [(phase, start, duration)])
    for pid in sorted(names, key=lambda p: order.get(p, p)):
        mine = [e for e in events if e.get("ph") == "X" and e["pid"] == pid and
                e["args"]["op"] == op and e["cat"] == "phase"]
        if names[pid].startswith("rank "):
            rows.append((names[pid].split(" of ")[0], mine))
            continue
        for chunk in sorted({e["args"]["chunk"] for e in mine}):
            label = f"{names[pid]} chunk {chunk}"
            rows.append((label, [e for e in mine if e["args"]["chunk"] == chunk]))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("out")
    parser.add_argument("--op", type=int, default=None)
    args = parser.parse_args()
    with open(args.trace) as f:
        events = json.load(f)
    op = args.op if args.op is not None else pick_op(events)
    rows = rows_of(events, op)
    spans = [e for _, phases in rows for e in phases]
    if not spans:
        raise SystemExit(f"operation {op} is not in this trace")
    origin = min(e["ts"] for e in spans)
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(rows) + 1.5))
    for y, (_, phases) in enumerate(rows):
        for e in phases:
            ax.barh(y, e["dur"] / 1e3, left=(e["ts"] - origin) / 1e3, height=0.6,
                    color=COLORS.get(e["name"], "#7f7f7f"))
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label for label, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ms from the operation's first post")
    size = max(e["args"]["bytes"] for e in spans if e["args"].get("chunk") is None)
    ax.set_title(f"operation {op}: {size / 2**20:.1f} MiB all-reduce, each rank and each chunk")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
    ax.legend(handles, COLORS.keys(), loc="lower right", fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"operation {op}: {len(rows)} rows -> {args.out}")


if __name__ == "__main__":
    main()
