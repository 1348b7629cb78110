#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""DDP accuracy with wire compression: examples/pytorch_ddp.py trained through the reducers with
float32 gradients on the wire and with bf16 (or fp16) on the wire, side by side.

Each configuration runs under `reducectl launch --workers N --reducers K` with the same seeds;
rank 0 writes its per-epoch loss and test accuracy (--history). The table gives the final
accuracy of each and its difference from float32 on the wire (target: within 0.01); a PNG plots
the loss curves together.

  PYTHON ddp_accuracy.py --build-dir build --workers 4 --reducers 2 --epochs 6 --wire bf16 --out DIR

PYTHON: an interpreter with torch (the project's environment, ~/.cache/libreduce/venv/bin/python);
the ranks run with the same one.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", type=Path, default=Path("build"))
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--reducers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--wire", default="bf16", help="comma-separated wire types besides none")
    p.add_argument("--tolerance", type=float, default=0.01)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args(argv)


def train(args, wire: str) -> dict:
    """One training job; returns rank 0's history."""
    history = args.out / f"history-{wire}.json"
    history.unlink(missing_ok=True)
    build = args.build_dir.resolve()
    cmd = [str(build / "src/reducectl"), "launch", "--workers", str(args.workers), "--reducers",
           str(args.reducers), "--", sys.executable, str(REPO / "examples/pytorch_ddp.py"),
           "--epochs", str(args.epochs), "--wire-dtype", wire, "--history", str(history),
           "--min-accuracy", "0"]
    env = dict(os.environ, PYTHONPATH=str(build / "python"))
    env.pop("LIBREDUCE_WIRE_DTYPE", None)  # the flag decides
    log = args.out / f"train-{wire}.log"
    with open(log, "w") as out:
        rc = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                            timeout=args.timeout, check=False).returncode
    if rc != 0 or not history.is_file():
        raise RuntimeError(f"training with wire {wire} failed (rc={rc}); see {log}")
    doc = json.loads(history.read_text())
    doc["command"] = " ".join(cmd)
    return doc


def write_plot(path: Path, runs: dict[str, dict]) -> bool:
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    except ImportError:
        return False
    fig, (loss_ax, acc_ax) = plt.subplots(1, 2, figsize=(10, 4))
    for wire, doc in runs.items():
        epochs = [e["epoch"] for e in doc["epochs"]]
        label = "float32 on the wire" if wire == "none" else f"{wire} on the wire"
        loss_ax.plot(epochs, [e["loss"] for e in doc["epochs"]], marker="o", label=label)
        acc_ax.plot(epochs, [e["accuracy"] for e in doc["epochs"]], marker="o", label=label)
    loss_ax.set_xlabel("epoch")
    loss_ax.set_ylabel("training loss")
    acc_ax.set_xlabel("epoch")
    acc_ax.set_ylabel("test accuracy")
    for ax in (loss_ax, acc_ax):
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle("DDP through the reducers: gradients on the wire as float32 and compressed")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    args.out.mkdir(parents=True, exist_ok=True)
    wires = ["none"] + [w for w in args.wire.split(",") if w and w != "none"]
    runs = {wire: train(args, wire) for wire in wires}
    base = runs["none"]["epochs"][-1]["accuracy"]
    lines = [f"# DDP accuracy with wire compression, {datetime.date.today()}", "",
             f"`{' '.join(['/usr/bin/python3'] + [sys.argv[0]] + sys.argv[1:])}`", "",
             f"examples/pytorch_ddp.py, {args.workers} ranks through {args.reducers} reducers "
             f"(reducectl launch), {args.epochs} epochs, the same seeds; final test accuracy of "
             f"rank 0 and its difference from float32 on the wire (target: within "
             f"{args.tolerance}).", "",
             "| wire | final loss | final accuracy | difference | within |", "|---|---|---|---|---|"]
    failed = 0
    for wire, doc in runs.items():
        last = doc["epochs"][-1]
        diff = last["accuracy"] - base
        ok = abs(diff) <= args.tolerance
        failed += 0 if ok else 1
        lines.append(f"| {'float32' if wire == 'none' else wire} | {last['loss']:.4f} | "
                     f"{last['accuracy']:.4f} | {diff:+.4f} | {'yes' if ok else 'NO'} |")
    if write_plot(args.out / "loss.png", runs):
        lines += ["", "![loss and accuracy per epoch](loss.png)"]
    lines += ["", "Commands:", ""] + [f"- `{doc['command']}`" for doc in runs.values()]
    (args.out / "ddp_accuracy.md").write_text("\n".join(lines) + "\n")
    (args.out / "ddp_accuracy.json").write_text(json.dumps(runs, indent=1) + "\n")
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
