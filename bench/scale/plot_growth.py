#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plots what bench/scale/growth.sh measured: join time, memory and sockets against the ranks
(growth-ranks.txt), and the reducers' memory and sockets against the communicators they hold
(growth-comms.txt).

  plot_growth.py DIR    (writes DIR/growth.png)
"""
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    lines = path.read_text().splitlines()
    header = lines[0].lstrip("# ").split()
    rows = [line.split() for line in lines[1:] if line.strip() and not line.startswith("#")]
    return header, rows


def column(header, rows, name):
    """The column's values; "?" (a process never sampled, a missing footprint) as NaN."""
    i = header.index(name)
    return [float("nan") if r[i].startswith("?") else float(r[i].split(",")[0]) for r in rows]


def main(directory: Path):
    header, rows = read_rows(directory / "growth-ranks.txt")
    rows.sort(key=lambda r: int(r[0]))
    n = column(header, rows, "n")
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    axes[0].plot(n, column(header, rows, "join_ms(median,max)"), "o-", label="rank join (median)")
    axes[0].set(xlabel="ranks", ylabel="ms", title="join time against ranks (one host)")
    axes[1].plot(n, column(header, rows, "rank_rss_mib(median)"), "o-", label="rank")
    axes[1].plot(n, column(header, rows, "reducer_rss_mib(max)"), "s-", label="reducer")
    axes[1].set(xlabel="ranks", ylabel="MiB", title="peak resident memory against ranks")
    axes[2].plot(n, column(header, rows, "rank_sockets"), "o-", label="rank")
    axes[2].plot(n, column(header, rows, "reducer_sockets(max)"), "s-", label="reducer")
    axes[2].set(xlabel="ranks", ylabel="sockets", title="sockets per process against ranks")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(directory / "growth.png", dpi=110)

    header, rows = read_rows(directory / "growth-comms.txt")
    comms = column(header, rows, "comms_per_process")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    axes[0].plot(comms, column(header, rows, "reducer_rss_mib(max)"), "s-", label="reducer")
    axes[0].plot(comms, column(header, rows, "rank_rss_mib(median)"), "o-", label="rank")
    axes[0].set(xlabel="communicators of 4 ranks held at once", ylabel="MiB",
                title="peak resident memory against communicators")
    axes[1].plot(comms, column(header, rows, "reducer_cpu_us_per_operation"), "s-",
                 label="reducer CPU per operation (us)")
    axes[1].set(xlabel="communicators of 4 ranks held at once", ylabel="us",
                title="reducer CPU per operation", ylim=(0, None))
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(directory / "growth-comms.png", dpi=110)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
