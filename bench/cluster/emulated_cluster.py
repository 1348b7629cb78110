#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Benchmark all-reduce systems side by side on an emulated cluster built on one machine.

On one machine without caps, the benchmarks are memory-bound and reduction server loses to
ring by design. Its advantage appears when each host's NIC is the bottleneck. This harness
emulates that: every worker and every reducer runs in its own network namespace behind a veth
link capped in both directions with tc (see netns.py), and the systems run one after the other
in the same topology, with the same flags:

  rs    reduce-server reducers + rd_perf --algo rs   (reduction server)
  auto  reduce-server reducers + rd_perf --algo auto (rs or ring, chosen per size)
  ring  rd_perf --algo ring                          (libreduce's ring between the workers)
  gloo  gloo_perf                                    (Gloo, file-store rendezvous)
  mpi   mpirun ... mpi_perf                          (Open MPI, TCP BTL over eth0)
  rs-bf16, rs-fp16   rs with rd_perf --wire-dtype bf16 / fp16 (wire compression; only when
                     named in --systems)

All perf programs take the nccl-tests flags and rank 0 writes a JSON file (-J). The output
directory gets results.csv / results.json / results.md / meta.json, PNG plots and every
process's log (see report.py).

libreduce's processes get UCX_TLS=tcp (--ucx-tls) and UCX_NET_DEVICES=eth0, so no byte takes
a shared-memory shortcut past the caps; other LIBREDUCE_* settings in the environment (chunk
size, window, ...) reach them unchanged. Per run, the tx byte counters of every eth0 and the
packets dropped at the caps are recorded, which shows what really crossed the links.

Root is needed for namespaces and tc. Every namespace and process is removed at the end, also
on failure and on SIGINT / SIGTERM; each benchmark run has a deadline, after which it is killed
and recorded as failed while the harness moves on.

  emulated_cluster.py --build-dir build --workers 4 --reducers 4 --rate 1gbit \
      --sizes 4K,64M --iters 5 --warmup 2 --out bench/results/cluster-1gbit
  emulated_cluster.py --scenario n=2,k=2,rate=1gbit --scenario n=4,k=4,rate=1gbit ... --out D
  emulated_cluster.py --smoke --build-dir build --out /tmp/smoke   (exit 77: cannot run here)
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import netns  # noqa: E402  pylint: disable=wrong-import-position
import report  # noqa: E402  pylint: disable=wrong-import-position
import runners  # noqa: E402  pylint: disable=wrong-import-position

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_SKIPPED, EXIT_INTERRUPTED = 0, 1, 2, 77, 130
SMOKE = {"scenario": "n=2,k=2,rate=100mbit", "b": "4K", "e": "256K", "f": "4", "iters": 2,
         "warmup": 1, "timeout": 20.0, "probe_seconds": 0.5}


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived; unwinds to the teardown code."""


@dataclasses.dataclass(frozen=True)
class Scenario:
    n: int
    k: int
    rate: str

    @property
    def label(self) -> str:
        return f"n{self.n}-k{self.k}-{self.rate}"


def parse_scenario(text: str, defaults: Scenario) -> Scenario:
    """"n=4,k=4,rate=1gbit" (missing keys from defaults)."""
    fields = {"n": defaults.n, "k": defaults.k, "rate": defaults.rate}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep or key.strip() not in fields:
            raise ValueError(f"scenario {text!r}: expected n=N,k=K,rate=RATE")
        fields[key.strip()] = value.strip() if key.strip() == "rate" else int(value)
    netns.parse_rate(fields["rate"])  # validates
    if fields["n"] < 2 or fields["k"] < 1:
        raise ValueError(f"scenario {text!r}: needs n >= 2 and k >= 1")
    return Scenario(**fields)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="All-reduce systems side by side on an emulated cluster (namespaces + tc).",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n")[-1])
    parser.add_argument("--build-dir", default="build", type=Path,
                        help="CMake build tree with src/reduce-server and bench/*_perf")
    parser.add_argument("--out", type=Path, help="output directory (created)")
    parser.add_argument("--workers", "-N", type=int, default=4)
    parser.add_argument("--reducers", "-K", type=int, default=4)
    parser.add_argument("--rate", default="1gbit", help="per-host link cap, e.g. 1gbit, none")
    parser.add_argument("--scenario", action="append", default=[],
                        help="n=N,k=K,rate=R; repeatable (replaces --workers/--reducers/--rate)")
    parser.add_argument("--systems", default=None,
                        help="comma list of rs,ring,gloo,mpi (default: all that are built)")
    parser.add_argument("--sizes", help="MIN,MAX message sizes (same as -b MIN -e MAX)")
    parser.add_argument("-b", "--minbytes", default="4K")
    parser.add_argument("-e", "--maxbytes", default="64M")
    parser.add_argument("-f", "--stepfactor", default="2")
    parser.add_argument("--iters", "-n", type=int, default=5)
    parser.add_argument("--warmup", "-w", type=int, default=2)
    parser.add_argument("--dtype", "-d", default="float32")
    parser.add_argument("--op", "-o", default="sum")
    parser.add_argument("--check", "-c", type=int, choices=(0, 1), default=1)
    parser.add_argument("--repeats", type=int, default=1,
                        help="run each system this many times, interleaved; tables use medians")
    parser.add_argument("--rounds", type=int, default=5,
                        help="auto-same: timed rounds of every algorithm per size, interleaved")
    parser.add_argument("--same-algos", default="auto,rs,ring",
                        help="auto-same: the algorithms, the first against the fastest other "
                             "(rs,rs,ring: two rs communicators, the resolution of the method)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds one system run may take before it is killed")
    parser.add_argument("--ucx-tls", default="tcp",
                        help="UCX_TLS for libreduce (tcp keeps traffic on the capped links)")
    parser.add_argument("--probe-seconds", type=float, default=1.0,
                        help="length of the w0->w1 throughput probe per scenario (0: none)")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny run (n=2, k=2, 100mbit, 4K..256K) for the test suite")
    args = parser.parse_args(argv)
    if args.smoke:
        _apply_smoke(args)
    if args.sizes:
        low, _, high = args.sizes.partition(",")
        args.minbytes, args.maxbytes = low, high or low
    if args.out is None:
        parser.error("--out DIR is required")
    try:
        defaults = Scenario(args.workers, args.reducers, args.rate)
        specs = args.scenario or [""]
        args.scenarios = [parse_scenario(text, defaults) for text in specs]
    except ValueError as exc:
        parser.error(str(exc))
    return args


def _apply_smoke(args: argparse.Namespace) -> None:
    args.scenario = [SMOKE["scenario"]]
    args.sizes = None
    args.minbytes, args.maxbytes, args.stepfactor = SMOKE["b"], SMOKE["e"], SMOKE["f"]
    args.iters, args.warmup, args.repeats = SMOKE["iters"], SMOKE["warmup"], 1
    args.timeout = min(args.timeout, SMOKE["timeout"])
    args.probe_seconds = SMOKE["probe_seconds"]


# -- preflight ------------------------------------------------------------------------------------

def preflight() -> str | None:
    """Why this machine cannot run the benchmark, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces and tc)"
    for tool in (netns.IP, netns.TC):
        if shutil.which(tool) is None:
            return f"`{tool}` (iproute2) not found"
    probe = f"rdbprobe{os.getpid()}"
    try:
        netns.run_cmd([netns.IP, "netns", "add", probe])
    except netns.TopologyError as exc:
        return f"cannot create network namespaces: {exc}"
    finally:
        with SignalShield():
            if Path(f"/run/netns/{probe}").exists():
                netns.run_cmd([netns.IP, "netns", "del", probe])
    return None


def choose_systems(requested: str | None, binaries: runners.Binaries, smoke: bool):
    """(systems to run, {system: why skipped})."""
    missing = binaries.missing_by_system()
    if requested:
        wanted = [s.strip() for s in requested.split(",") if s.strip()]
        unknown = [s for s in wanted if s not in runners.SYSTEMS]
        if unknown:
            raise ValueError(f"unknown systems {unknown}; choose from {list(runners.SYSTEMS)}")
    elif smoke:
        wanted = ["rs", "ring"] + (["gloo"] if "gloo" not in missing else [])
    else:
        wanted = [s for s in runners.SYSTEMS
                  if s not in missing and s not in runners.OPT_IN_SYSTEMS]
    skipped = {s: missing[s] for s in wanted if s in missing}
    return [s for s in wanted if s not in skipped], skipped


# -- signals ------------------------------------------------------------------------------------

def _raise_interrupted(signum, _frame):
    raise Interrupted(signal.Signals(signum).name)


class SignalShield:
    """Blocks SIGINT/SIGTERM while teardown runs, so a second Ctrl-C cannot cut it short."""

    def __enter__(self):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})

    def __exit__(self, *exc):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


# -- one scenario -------------------------------------------------------------------------------

def run_scenario(index: int, scenario: Scenario, systems: list[str], args, binaries,
                 results: dict) -> None:
    """Builds the topology, runs every system (args.repeats times, interleaved), tears down."""
    prefix = f"rdb{os.getpid()}s{index}"
    stale = netns.stale_namespaces(prefix + "-")
    if stale:
        raise netns.TopologyError(f"namespaces {stale} already exist; delete them first")
    topo = netns.Topology(prefix, scenario.n, scenario.k, scenario.rate,
                          switch_address="mpi" in systems)
    info = {"label": scenario.label, "n": scenario.n, "k": scenario.k, "rate": scenario.rate,
            "rate_bps": topo.rate_bps, "model_speedup_rs_over_ring":
                report.model_speedup(scenario.n, scenario.k)}
    results["scenarios"].append(info)
    work = Path(tempfile.mkdtemp(prefix=f"{prefix}-"))
    try:
        print(f"== {scenario.label}: building {scenario.n} workers, {scenario.k} reducers",
              flush=True)
        topo.create()
        info["topology"] = topo.describe()
        info["probe"] = probe_link(topo, args.probe_seconds)
        for repeat in range(args.repeats):
            for system in systems:
                run_one(topo, scenario, system, repeat, args, binaries, work, results)
    finally:
        with SignalShield():
            leftovers = topo.kill_processes()
            errors = topo.destroy()
            shutil.rmtree(work, ignore_errors=True)
        if leftovers or errors:
            info["teardown"] = {"killed_leftover_pids": leftovers, "errors": errors}


def probe_link(topo: netns.Topology, seconds: float) -> dict | None:
    """Measures one TCP stream w0 -> w1 so the report shows the cap really holds."""
    if seconds <= 0:
        return None
    sender, receiver = topo.workers[0], topo.workers[1]
    entry = {"path": f"{sender.name}->{receiver.name}", "seconds": seconds}
    try:
        entry["bps"] = topo.measure_throughput(sender, receiver, seconds)
        print(f"   link probe {entry['path']}: {entry['bps'] / 1e6:.0f} Mbit/s", flush=True)
    except netns.TopologyError as exc:
        entry["error"] = str(exc)
    return entry


def run_one(topo, scenario: Scenario, system: str, repeat: int, args, binaries, work: Path,
            results: dict) -> None:
    """One system once: runs it, records its outcome and its rows."""
    name = system if args.repeats == 1 else f"{system}-rep{repeat}"
    log_dir = args.out / "logs" / scenario.label / name
    ctx = runners.RunContext(topo=topo, system=system, binaries=binaries, log_dir=log_dir,
                             work_dir=work / name, perf_flags=perf_flags(args),
                             comm_id=f"{topo.prefix}-{name}-{time.time_ns()}",
                             timeout_s=args.timeout, ucx_tls=args.ucx_tls,
                             master_port=runners.MASTER_PORT_BASE + 10 * len(results["runs"]),
                             rounds=args.rounds, same_algos=args.same_algos)
    print(f"   {name}: running", flush=True)
    before = topo.link_counters()
    outcome = runners.run_system(ctx)
    after = topo.link_counters()
    run = {"scenario": scenario.label, "system": system, "repeat": repeat,
           "status": outcome.status, "note": outcome.note, "wall_s": round(outcome.wall_s, 2),
           "command": outcome.command, "log_dir": str(log_dir),
           "traffic": _traffic(before, after), "reducer_cpu_s": outcome.reducer_cpu_s}
    results["runs"].append(run)
    base = {"scenario": scenario.label, "repeat": repeat, "system": system, "n": scenario.n,
            "k": scenario.k, "rate": scenario.rate}
    rows = report.rows_from_perf_json(outcome.doc, base) if outcome.doc else []
    calls = 2 * (args.warmup + args.iters + (1 if args.check else 0))  # both placements
    run["reduced_bytes"] = calls * sum(r["size"] for r in rows if r["placement"] == "in_place")
    if outcome.status == "ok" and not rows:
        run["status"], run["note"] = "failed", "rank 0 wrote no results"
    results["rows"].extend(rows)
    wrong = sum(int(r.get("wrong") or 0) for r in rows)
    print(f"   {name}: {run['status']}{' (' + run['note'] + ')' if run['note'] else ''}, "
          f"{len(rows)} rows, #wrong {wrong}, {run['wall_s']} s, "
          f"{run['traffic']['cap_drops']} packets dropped at the caps", flush=True)


def _traffic(before: dict, after: dict) -> dict:
    """Bytes sent by the workers and by the reducers during one run, and packets dropped at
    the rate caps (a nonzero figure means queues overflowed: TCP losses and retransmits)."""
    def delta(field: str, role: str) -> int:
        return sum(after[h][field] - before[h][field] for h in after if h.startswith(role))
    return {"workers_tx": delta("tx", "w"), "reducers_tx": delta("tx", "r"),
            "cap_drops": delta("drops", "w") + delta("drops", "r")}


def perf_flags(args) -> list[str]:
    return ["-b", args.minbytes, "-e", args.maxbytes, "-f", args.stepfactor,
            "-n", str(args.iters), "-w", str(args.warmup), "-c", str(args.check),
            "-d", args.dtype, "-o", args.op]


# -- outputs ------------------------------------------------------------------------------------

def machine_meta(argv: list[str], args, systems, skipped) -> dict:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    models = [line.split(":", 1)[1].strip() for line in cpuinfo.splitlines()
              if line.startswith("model name")]
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return {
        "command": [sys.executable, str(Path(__file__).resolve())] + argv,
        "cwd": os.getcwd(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "uname": _output(["uname", "-a"]),
        "cpu_model": models[0] if models else platform.processor(),
        "cpu_count": len(models) or os.cpu_count(),
        "memory": meminfo.get("MemTotal", "").strip(),
        "python": sys.version.split()[0],
        "ucx": _first_line(["ucx_info", "-v"]),
        "mpirun": _first_line(["mpirun", "--version"]),
        "git": {"head": _output(["git", "rev-parse", "HEAD"]),
                "dirty": bool(_output(["git", "status", "--porcelain", "-uno"]))},
        "binaries": {k: str(v) if v else None for k, v in args.binaries.as_dict().items()},
        "systems": systems, "skipped_systems": skipped,
        "perf_flags": perf_flags(args), "repeats": args.repeats, "timeout_s": args.timeout,
        "ucx_tls": args.ucx_tls, "smoke": args.smoke,
    }


def _output(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10,
                              cwd=Path(__file__).resolve().parent, check=False)
        return done.stdout.strip()
    except OSError:
        return ""


def _first_line(argv: list[str]) -> str:
    lines = _output(argv).splitlines()
    return lines[0].lstrip("# ") if lines else ""


def write_outputs(out: Path, meta: dict, results: dict) -> list[str]:
    """Every output file; returns notes on what could not be written."""
    notes = []
    report.write_csv(out / "results.csv", results["rows"])
    report.write_json(out / "results.json", results["scenarios"], results["runs"], results["rows"])
    try:
        plots = report.write_plots(out, results["scenarios"], results["rows"])
    except ImportError as exc:
        plots = []
        notes.append(f"plots skipped: {exc}")
    meta["notes"] = meta.get("notes", []) + notes
    report.write_markdown(out / "results.md", "All-reduce on an emulated cluster",
                          results["scenarios"], results["runs"], results["rows"], plots)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return notes


def verdict(results: dict, systems: list[str], out: Path, smoke: bool) -> tuple[int, str]:
    """Exit code and a one-line summary: every run ok, #wrong 0, output files present."""
    bad = [f"{r['scenario']}/{r['system']}: {r['status']}" for r in results["runs"]
           if r["status"] != "ok"]
    wrong = sum(int(r.get("wrong") or 0) for r in results["rows"])
    ran = {r["system"] for r in results["runs"] if r["status"] == "ok"}
    missing_files = [f for f in ("results.csv", "results.json", "results.md", "meta.json")
                     if not (out / f).is_file()]
    problems = bad + ([f"#wrong = {wrong}"] if wrong else [])
    problems += [f"{s} never ran" for s in systems if s not in ran]
    problems += [f"missing {f}" for f in missing_files]
    if problems:
        return EXIT_FAILED, "FAILED: " + "; ".join(problems)
    return EXIT_OK, f"ok: {len(results['runs'])} runs, {len(results['rows'])} rows, #wrong 0"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    previous = {s: signal.signal(s, _raise_interrupted) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return run(argv, args)
    except Interrupted as exc:
        print(f"emulated_cluster: interrupted by {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run(argv: list[str], args: argparse.Namespace) -> int:
    """Preflight, every scenario, the output files and the verdict; returns the exit code."""
    reason = preflight()
    if reason:
        print(f"emulated_cluster: skipped: {reason}", file=sys.stderr)
        return EXIT_SKIPPED if args.smoke else EXIT_USAGE
    args.binaries = runners.Binaries.find(args.build_dir)
    try:
        systems, skipped = choose_systems(args.systems, args.binaries, args.smoke)
    except ValueError as exc:
        print(f"emulated_cluster: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for system, why in skipped.items():
        print(f"emulated_cluster: {system}: skipped: {why}", flush=True)
    if not systems or (args.smoke and skipped):
        need = ", ".join(skipped) if args.smoke and skipped else "any system"
        print(f"emulated_cluster: FAILED: nothing to run without {need}", file=sys.stderr)
        return EXIT_FAILED
    args.out.mkdir(parents=True, exist_ok=True)
    meta = machine_meta(argv, args, systems, skipped)
    results = {"scenarios": [], "runs": [], "rows": []}
    code = None
    try:
        for index, scenario in enumerate(args.scenarios):
            run_scenario(index, scenario, systems, args, args.binaries, results)
    except Interrupted as exc:
        meta["notes"] = [f"interrupted by {exc}; results are partial"]
        code = EXIT_INTERRUPTED
    except netns.TopologyError as exc:
        meta["notes"] = [f"topology: {exc}"]
        print(f"emulated_cluster: {exc}", file=sys.stderr)
        code = EXIT_FAILED
    finally:
        meta["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds")
        for note in write_outputs(args.out, meta, results):
            print(f"emulated_cluster: {note}", file=sys.stderr)
    status, summary = verdict(results, systems, args.out, args.smoke)
    print(f"emulated_cluster: {summary}; results in {args.out}", flush=True)
    return code if code is not None else status


if __name__ == "__main__":
    sys.exit(main())
