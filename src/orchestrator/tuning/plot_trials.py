# SPDX-License-Identifier: BSD-3-Clause
"""Draws a tuning job's trials: the objective of each trial against its number, and the best so
far, from the trials.json `reducectl tune` writes.

    python3 plot_trials.py TRIALS_JSON OUT_PNG
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)


def objective(trial, metric_id):
    final = trial.get("finalMeasurement")
    if not final:
        return None
    for metric in final.get("metrics", []):
        if metric["metricId"] == metric_id:
            return metric["value"]
    if len(final.get("metrics", [])) == 1:
        return final["metrics"][0]["value"]  # reported under the default tag
    return None


def main(trials_path, out_path):
    with open(trials_path) as f:
        record = json.load(f)
    metric = record["metrics"][0]
    maximize = metric["goal"] == "MAXIMIZE"
    xs, ys, best_xs, best_ys, early = [], [], [], [], []
    best = None
    for trial in record["trials"]:
        value = objective(trial, metric["metricId"])
        if value is None:
            continue
        n = int(trial["id"])
        xs.append(n)
        ys.append(value)
        if trial.get("earlyStopped"):
            early.append((n, value))
        if best is None or (value > best if maximize else value < best):
            best = value
        best_xs.append(n)
        best_ys.append(best)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(xs, ys, "o", label="trial", color="tab:blue")
    if early:
        ax.plot(*zip(*early), "x", label="stopped early", color="tab:red")
    if best_xs:  # carried half a trial on, so the last improvement shows as a step
        best_xs.append(best_xs[-1] + 0.5)
        best_ys.append(best_ys[-1])
    ax.step(best_xs, best_ys, where="post", label="best so far", color="tab:green")
    ax.set_xlabel("trial")
    ax.set_ylabel(metric["metricId"] + (" (maximize)" if maximize else " (minimize)"))
    ax.set_title("tuning job " + record["tuningJobId"])
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_path, dpi=100)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_trials.py TRIALS_JSON OUT_PNG")
    main(sys.argv[1], sys.argv[2])
