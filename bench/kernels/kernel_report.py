#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turns rd_cpu_kernel_bench (or rd_cuda_kernel_bench) JSON output into a markdown table of
bytes moved per second, each next to memcpy's rate at the same thread count from the same run,
and checks the bars (fp32 sum >= 80% of memcpy, bf16/fp16 sum >= 70%, the wire-compression
conversions float32 <-> bf16/fp16 >= 80%).

usage: kernel_report.py RESULT.json [--check]   (--check: exit 1 when a bar is missed)

Best run with repetitions interleaved at random, so that the machine's drift hits the kernels
and memcpy alike; the medians are then compared:
  rd_cpu_kernel_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \
      --benchmark_out=kernels.json --benchmark_out_format=json
"""
import json
import re
import sys

BARS = {"float32": 0.80, "bfloat16": 0.70, "float16": 0.70}
CONVERT_BAR = 0.80
DTYPES = {6: "float16", 7: "float32", 9: "bfloat16"}


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    with open(argv[1]) as f:
        data = json.load(f)
    memcpy = {}  # threads -> [rates], from the start and the end of the run
    rows = []
    conversions = []
    benchmarks = data["benchmarks"]
    # With --benchmark_repetitions the medians are reported; single runs are used as they are.
    if any(b.get("aggregate_name") == "median" for b in benchmarks):
        benchmarks = [b for b in benchmarks if b.get("aggregate_name") == "median"]
    for b in benchmarks:
        name = b["name"]
        rate = b.get("bytes_per_second")
        if rate is None:
            continue
        m = re.match(r"BM_Memcpy(?:_end)?/(\d+)", name)
        if m:
            memcpy.setdefault(int(m.group(1)), []).append(rate)
            continue
        m = re.match(r"BM_Convert/(\d+)/(\d+)/(\d+)", name)
        if m:
            conversions.append(("widen" if m.group(1) == "1" else "narrow",
                                DTYPES.get(int(m.group(2)), m.group(2)), int(m.group(3)), rate))
            continue
        m = re.match(r"BM_Reduce/(\d+)/(\d+)/(\d+)", name)
        if m:
            rows.append((DTYPES.get(int(m.group(1)), m.group(1)), int(m.group(2)),
                         int(m.group(3)), rate, b.get("label", "")))
    ctx = data.get("context", {})
    print(f"Machine: {ctx.get('num_cpus')} CPUs at {ctx.get('mhz_per_cpu')} MHz; "
          f"run {ctx.get('date')}")
    print()
    for threads, rates in sorted(memcpy.items()):
        print(f"memcpy, {threads} thread(s): " +
              ", ".join(f"{r / 1e9:.1f} GB/s" for r in rates) +
              " (measured first and last; their mean is the reference)")
    print()
    print("| dtype | N | threads | kernel GB/s | memcpy GB/s | ratio | bar | ok |")
    print("|---|---|---|---|---|---|---|---|")
    missed = 0
    rows.sort(key=lambda r: (r[2], list(BARS).index(r[0]) if r[0] in BARS else 9, r[1]))
    for dtype, n, threads, rate, label in rows:
        ref = memcpy.get(threads)
        if not ref:
            continue
        ref_rate = sum(ref) / len(ref)
        ratio = rate / ref_rate
        bar = BARS.get(dtype, 0)
        ok = ratio >= bar
        missed += 0 if ok else 1
        print(f"| {dtype} | {n} | {threads} | {rate / 1e9:.1f} | {ref_rate / 1e9:.1f} | "
              f"{ratio:.2f} | {bar:.2f} | {'yes' if ok else 'NO'} |")
    print()
    print(f"{len(rows) - missed} of {len(rows)} rows meet the bar (GB = 1e9 bytes).")
    if conversions:
        print()
        print("Wire-compression conversions (float32 -> narrow as a worker sends, narrow -> "
              "float32 as it receives; 6 bytes moved per element):")
        print()
        print("| conversion | type | threads | GB/s | memcpy GB/s | ratio | bar | ok |")
        print("|---|---|---|---|---|---|---|---|")
        conv_missed = 0
        for kind, dtype, threads, rate in sorted(conversions, key=lambda c: (c[2], c[0], c[1])):
            ref = memcpy.get(threads)
            if not ref:
                continue
            ref_rate = sum(ref) / len(ref)
            ratio = rate / ref_rate
            ok = ratio >= CONVERT_BAR
            conv_missed += 0 if ok else 1
            print(f"| {kind} | {dtype} | {threads} | {rate / 1e9:.1f} | {ref_rate / 1e9:.1f} | "
                  f"{ratio:.2f} | {CONVERT_BAR:.2f} | {'yes' if ok else 'NO'} |")
        print()
        print(f"{len(conversions) - conv_missed} of {len(conversions)} conversions meet the bar.")
        missed += conv_missed
    return 1 if missed and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
