#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Trains a small classifier with DistributedDataParallel over libreduce.

Run it as a reducectl job (2 reducers, the primary and 3 workers), from the repository root:

    build/src/reducectl run examples/jobs/pytorch_ddp.yaml

or with any launcher that sets RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT (torchrun;
without LIBREDUCE_REDUCERS the ranks reduce among themselves with a ring):

    build/src/reducectl launch --workers 4 --reducers 2 -- python3 examples/pytorch_ddp.py

The data is synthetic (four Gaussian classes in 16 dimensions, the same on every rank; each
rank trains on its shard). Rank 0 prints the loss and test accuracy after every epoch; the
program exits 1 if the final accuracy is below --min-accuracy. --wire-dtype bf16 sends the
float32 gradients to the reducers as bfloat16 (summed there in float32); --history FILE writes
rank 0's per-epoch loss and accuracy as JSON. --deterministic makes every run give the same
bits (through a reducer failover as well); --params-out FILE writes rank 0's final parameters.

As a hyperparameter-tuning trial (CLOUD_ML_HP_METRIC_FILE names the metrics file), rank 0 also
reports the test accuracy after every epoch under the tag "accuracy" (global step = epoch, from
1), through Google's cloudml-hypertune package if installed, else libreduce.hypertune; the last
report is the final accuracy.
"""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import libreduce.torch  # noqa: F401  (registers the "libreduce" backend)

CLASSES, FEATURES = 4, 16


def make_dataset(samples, seed):
    centers = torch.randn(CLASSES, FEATURES, generator=torch.Generator().manual_seed(42))
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, CLASSES, (samples,), generator=g)
    points = centers[labels] + torch.randn(samples, FEATURES, generator=g) * 1.6
    return TensorDataset(points, labels)


def evaluate(model, loader):
    """Correct and total predictions over every rank's shard of the test set."""
    model.eval()
    counts = torch.zeros(2, dtype=torch.int64)
    with torch.no_grad():
        for x, y in loader:
            counts[0] += (model(x).argmax(dim=1) == y).sum()
            counts[1] += y.numel()
    dist.all_reduce(counts)  # int64 sum over the ranks
    model.train()
    return counts[0].item() / counts[1].item()


def metric_reporter():
    """A hypertune reporter when this run is a tuning trial, else None."""
    if not os.environ.get("CLOUD_ML_HP_METRIC_FILE"):
        return None
    try:
        import hypertune
    except ImportError:
        from libreduce import hypertune
    return hypertune.HyperTune()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--backend", default="libreduce", help="libreduce or gloo")
    parser.add_argument("--min-accuracy", type=float, default=0.8)
    parser.add_argument("--wire-dtype", choices=["none", "bf16", "fp16"],
                        help="wire compression of the gradients (default: LIBREDUCE_WIRE_DTYPE)")
    parser.add_argument("--history", help="rank 0 writes the per-epoch loss and accuracy here")
    parser.add_argument("--deterministic", action="store_true",
                        help="the same bits on every run: deterministic torch kernels, and the "
                             "reducers sum in rank order (LIBREDUCE_DETERMINISTIC=1)")
    parser.add_argument("--params-out", help="rank 0 writes the final parameters' bytes here")
    args = parser.parse_args()

    torch.set_num_threads(1)
    if args.deterministic:
        os.environ["LIBREDUCE_DETERMINISTIC"] = "1"
        torch.use_deterministic_algorithms(True)
    if args.wire_dtype:
        libreduce.torch.set_options(wire_dtype=args.wire_dtype)
    dist.init_process_group(args.backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)

    train_set, test_set = make_dataset(4096, seed=1), make_dataset(1024, seed=2)
    sampler = DistributedSampler(train_set, shuffle=True, seed=0)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    test_loader = DataLoader(test_set, batch_size=256,
                             sampler=DistributedSampler(test_set, shuffle=False))

    model = DDP(nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES)))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    if rank == 0:
        print("training on %d ranks, backend %s, %d samples per rank per epoch"
              % (size, dist.get_backend(), len(sampler)), flush=True)

    reporter = metric_reporter() if rank == 0 else None
    start = time.monotonic()
    accuracy = 0.0
    history = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total = torch.zeros(2, dtype=torch.float64)
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()  # DDP all-reduces the gradients through libreduce here
            optimizer.step()
            total += torch.tensor([loss.item() * y.numel(), y.numel()], dtype=torch.float64)
        dist.all_reduce(total)
        accuracy = evaluate(model, test_loader)
        history.append({"epoch": epoch + 1, "loss": (total[0] / total[1]).item(),
                        "accuracy": accuracy})
        if rank == 0:
            print("epoch %d: loss %.4f  test accuracy %.3f" % (epoch + 1, total[0] / total[1],
                                                               accuracy), flush=True)
        if reporter is not None:
            reporter.report_hyperparameter_tuning_metric("accuracy", accuracy,
                                                         global_step=epoch + 1)
    dist.barrier()
    if rank == 0 and args.params_out:
        with open(args.params_out, "wb") as f:
            for p in model.module.parameters():
                f.write(p.detach().numpy().tobytes())
    if rank == 0 and args.history:
        with open(args.history, "w") as f:
            json.dump({"wire_dtype": args.wire_dtype, "ranks": size, "epochs": history}, f)
    if rank == 0:
        print("final test accuracy %.3f after %d epochs on %d ranks (%.1f s)"
              % (accuracy, args.epochs, size, time.monotonic() - start), flush=True)
    dist.destroy_process_group()
    raise SystemExit(0 if accuracy >= args.min_accuracy else 1)


if __name__ == "__main__":
    main()
