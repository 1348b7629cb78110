#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The hostile-network suite: every TCP port a reducer and a worker listen on (found with `ss`,
then told apart by probing: the one that answers a bootstrap hello with a challenge is
libreduce's, the others are UCX's) gets each hostile input of attacks.py while a verified job
(two rd_perf ranks, every element checked) runs through the same reducer. Each case passes when
the reducer and the job survive with 0 wrong elements, the reducer's peak memory stays within
its limit, and the port answered as it must (attacks.unexpected: garbage closed or reset, a
forged or replayed proof refused, no challenge from a UCX port, idle connections beyond the
bootstrap's bound closed); the job's time is reported next to an undisturbed run's.

  tests/hostile/hostile_network.py --build-dir build [--out DIR] [--ports-only]
                                   [--reduce-server PATH]

--ports-only checks only that `reduce-server --listen 127.0.0.1:0` and its workers listen on
127.0.0.1 alone. --reduce-server runs another build's reducer (an ASan one) against this build's
workers; --skip-memory-check then, as ASan's quarantine grows its RSS. Exit status 0 when every case passed.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import attacks  # noqa: E402  pylint: disable=wrong-import-position

HOST = "127.0.0.1"
SECRET = b"hostile-suite-secret-5d1c"
MEMORY_LIMIT_MB = 64
# What hostile input may add to the reducer's peak RSS over its undisturbed jobs': the bootstrap
# holds at most 256 unauthenticated connections of one capped frame each (16 MiB at worst).
MEMORY_GROWTH_MB = 32
JOB_FLAGS = ["-b", "1M", "-e", "8M", "-f", "2", "-n", "20", "-w", "2", "-c", "1"]
JOB_TIMEOUT_S = 120
WAIT_S = 30


def listening_ports(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every listening TCP socket of `pid`, from ss."""
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        if f"pid={pid}," not in line:
            continue
        local = line.split()[3]
        host, _, port = local.rpartition(":")
        found.append((host.strip("[]"), int(port)))
    return sorted(set(found))


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}")


@dataclass
class Port:
    owner: str  # "reducer" or "worker"
    kind: str   # "bootstrap" or "ucx"
    port: int

    @property
    def label(self) -> str:
        return f"{self.owner} {self.kind}"


class Suite:
    def __init__(self, build: Path, work: Path, reduce_server: Path):
        self.build = build
        self.reduce_server = reduce_server
        self.work = work
        self.secret_file = work / "secret"
        self.secret_file.write_bytes(SECRET + b"\n")
        self.secret_file.chmod(0o600)
        self.jobs = 0
        self.reducer: subprocess.Popen | None = None
        self.reducer_log = work / "reducer.log"
        self.address = ""
        self.metrics = ""  # the reducer's Prometheus endpoint

    # --- processes ------------------------------------------------------------------------
    def start_reducer(self):
        ready = self.work / "ready"
        self.reducer = subprocess.Popen(
            [str(self.reduce_server), "--listen", f"{HOST}:0",
             "--secret-file", str(self.secret_file), "--memory-limit", f"{MEMORY_LIMIT_MB}M",
             "--ready-file", str(ready), "--metrics", f"{HOST}:0"],
            stdout=subprocess.DEVNULL, stderr=open(self.reducer_log, "wb"))
        text = wait_for(lambda: ready.exists() and ready.read_text(), WAIT_S, "the reducer")
        self.address = re.search(r"address=(\S+)", text).group(1)
        self.metrics = re.search(r"metrics=(\S+)", text).group(1)

    def reducer_alive(self) -> bool:
        return self.reducer is not None and self.reducer.poll() is None

    def start_job(self) -> list[subprocess.Popen]:
        self.jobs += 1
        env = dict(os.environ, WORLD_SIZE="2", LIBREDUCE_REDUCERS=self.address,
                   LIBREDUCE_SECRET_FILE=str(self.secret_file),
                   LIBREDUCE_COMM_ID=f"hostile-{os.getpid()}-{self.jobs}")
        env.pop("LIBREDUCE_SECRET", None)
        ranks = []
        for rank in range(2):
            log = open(self.work / f"job{self.jobs}-rank{rank}.log", "wb")
            ranks.append(subprocess.Popen([str(self.build / "bench" / "rd_perf"), *JOB_FLAGS],
                                          env=dict(env, RANK=str(rank)), stdout=log,
                                          stderr=subprocess.STDOUT))
        return ranks

    def finish_job(self, ranks: list[subprocess.Popen]) -> tuple[bool, str]:
        ok = True
        for p in ranks:
            try:
                ok = p.wait(timeout=JOB_TIMEOUT_S) == 0 and ok
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                ok = False
        text = (self.work / f"job{self.jobs}-rank0.log").read_text(errors="replace")
        verified = "Out of bounds values : 0 OK" in text
        if not (ok and verified):
            tail = "\n".join(text.splitlines()[-8:])
            return False, f"job failed (exit ok={ok}, verified={verified}):\n{tail}"
        return True, ""

    def run_job(self, attack=None, target: Port | None = None) -> dict:
        """One verified job; `attack` runs against `target` while it does."""
        start = time.monotonic()
        ranks = self.start_job()
        stop = threading.Event()
        result: dict = {}
        thread = None
        if attack is not None:
            port = target.port
            if target.owner == "worker":
                port = self.worker_port(ranks[0], target.kind)
            thread = threading.Thread(
                target=lambda: result.update(outcome=attack(HOST, port, stop)), daemon=True)
            thread.start()
        ok, why = self.finish_job(ranks)
        elapsed = time.monotonic() - start
        stop.set()
        if thread is not None:
            thread.join(timeout=120)
        return {"ok": ok, "why": why, "time": elapsed, "outcome": result.get("outcome", "")}

    # --- ports ----------------------------------------------------------------------------
    def classify(self, pid: int, owner: str) -> list[Port]:
        ports = []
        for host, port in listening_ports(pid):
            if owner == "reducer" and f"{host}:{port}" == self.metrics:
                ports.append(Port(owner, "metrics", port))
                continue
            kind = "bootstrap" if attacks.is_bootstrap_port(host, port, SECRET) else "ucx"
            ports.append(Port(owner, kind, port))
        return ports

    def worker_port(self, rank: subprocess.Popen, kind: str) -> int:
        def find():
            if rank.poll() is not None:
                raise RuntimeError("the worker exited before its ports were seen")
            ports = [p for p in self.classify(rank.pid, "worker") if p.kind == kind]
            return ports[0].port if ports else None
        return wait_for(find, WAIT_S, f"a worker's {kind} port")

    def check_listen_addresses(self) -> list[str]:
        """Failures: sockets of the reducer or a worker on any address but HOST."""
        failures = []
        for host, port in listening_ports(self.reducer.pid):
            if host != HOST:
                failures.append(f"reducer listens on {host}:{port}")
        ranks = self.start_job()
        wait_for(lambda: all(len(listening_ports(r.pid)) >= 2 or r.poll() is not None
                             for r in ranks), WAIT_S, "the workers' listening sockets")
        for r in ranks:
            for host, port in listening_ports(r.pid):
                if host != HOST:
                    failures.append(f"worker pid {r.pid} listens on {host}:{port}")
        ok, why = self.finish_job(ranks)
        if not ok:
            failures.append(why)
        return failures

    def stop(self):
        if self.reducer is not None and self.reducer.poll() is None:
            self.reducer.terminate()
            try:
                self.reducer.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                self.reducer.kill()


def refusal_lines(log: Path) -> int:
    return sum(1 for line in log.read_text(errors="replace").splitlines() if "refused" in line)


def attack_every_port(suite: Suite, failures: list[str], args) -> tuple[list[tuple], float, float]:
    """Every input on every port, each during a verified job; rows for the table."""
    started = time.monotonic()
    reducer_ports = suite.classify(suite.reducer.pid, "reducer")
    if sorted({p.kind for p in reducer_ports}) != ["bootstrap", "metrics", "ucx"]:
        failures.append(f"expected a bootstrap, a metrics and a UCX port on the reducer, saw "
                        f"{reducer_ports}")
    baseline = [suite.run_job() for _ in range(3)]
    failures += ["undisturbed job: " + b["why"] for b in baseline if not b["ok"]]
    base_time = statistics.median(b["time"] for b in baseline)
    base_rss = peak_rss_mb(suite.reducer.pid)
    memory_cap = float("inf") if args.skip_memory_check else base_rss + MEMORY_GROWTH_MB
    print(f"undisturbed job: {base_time:.2f} s (median of 3); reducer peak {base_rss:.1f} MiB "
          f"(--memory-limit {MEMORY_LIMIT_MB}M), allowed under attack {memory_cap:.1f} MiB",
          flush=True)
    rows = []
    targets = reducer_ports + [Port("worker", "bootstrap", 0), Port("worker", "ucx", 0)]
    for name, attack in attacks.all_attacks(SECRET):
        for target in targets:
            r = suite.run_job(attack, target)
            alive = suite.reducer_alive()
            rss = peak_rss_mb(suite.reducer.pid) if alive else float("nan")
            wrong_answers = attacks.unexpected(name, target.kind, target.owner, r["outcome"])
            if target.kind == "metrics" and not attacks.scrapes(suite.metrics):
                wrong_answers.append("no scrape answered after it")
            passed = r["ok"] and alive and rss <= memory_cap and not wrong_answers
            rows.append((name, target.label, "survived" if passed else "FAILED", r["outcome"],
                         r["time"], r["time"] / base_time, rss))
            print(f"{name:22} {target.label:18} {'ok' if passed else 'FAILED':6} "
                  f"job {r['time']:6.2f} s ({r['time'] / base_time:4.2f}x)  "
                  f"reducer peak {rss:6.1f} MiB  [{r['outcome']}]", flush=True)
            if not passed:
                failures.append(f"{name} on {target.label}: reducer alive={alive}, "
                                f"peak {rss:.1f} MiB, answers it must not give: "
                                f"{wrong_answers}, {r['why']}")
            if not alive:
                failures.append("the reducer died:\n" + suite.reducer_log.read_text())
                return rows, base_time, base_rss
    minutes = (time.monotonic() - started) / 60
    lines = refusal_lines(suite.reducer_log)
    # One address (127.0.0.1): its first refusal, then at most a summary a minute.
    allowed = 2 + int(minutes) + 1
    print(f"reducer refusal log: {lines} lines in {minutes:.1f} min (allowed {allowed})")
    if lines > allowed:
        failures.append(f"{lines} refusal lines in the reducer's log, allowed {allowed}")
    return rows, base_time, base_rss


def run(args) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    work = Path(tempfile.mkdtemp(prefix="hostile-"))
    build = args.build_dir.resolve()
    suite = Suite(build, work, args.reduce_server or build / "src" / "reduce-server")
    failures: list[str] = []
    rows: list[tuple] = []
    try:
        suite.start_reducer()
        failures += suite.check_listen_addresses()
        print(f"listening sockets: {'only on ' + HOST if not failures else failures}", flush=True)
        if not args.ports_only:
            rows, base_time, base_rss = attack_every_port(suite, failures, args)
    except (OSError, RuntimeError, TimeoutError) as e:
        failures.append(f"{type(e).__name__}: {e}")
    finally:
        suite.stop()
    if args.out and rows:
        write_table(args.out, rows, base_time, base_rss)
    for f in failures:
        print("FAILED:", f)
    # The listen-address check, every (input, port) case, the refusal log check; in CTest's shape
    # for scripts/test.sh's totals.
    cases = 1 if args.ports_only else 2 + len(attacks.all_attacks(SECRET)) * 5
    print(f"hostile_network: {min(len(failures), cases)} tests failed out of {cases} (0 skipped)")
    if failures:
        print(f"hostile_network: logs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


def write_table(out: Path, rows: list[tuple], base_time: float, base_rss: float):
    out.mkdir(parents=True, exist_ok=True)
    lines = ["| input | port | outcome | what the port did | job time (s) | vs undisturbed "
             "| reducer peak RSS (MiB) |", "|---|---|---|---|---|---|---|"]
    for name, port, outcome, answer, t, ratio, rss in rows:
        lines.append(f"| {name} | {port} | {outcome} | {answer} | {t:.2f} | {ratio:.2f}x "
                     f"| {rss:.1f} |")
    lines.append(f"\nUndisturbed job: {base_time:.2f} s (median of 3), reducer peak "
                 f"{base_rss:.1f} MiB. Job: 2 rd_perf ranks {' '.join(JOB_FLAGS)} through 1 "
                 f"reducer (--memory-limit {MEMORY_LIMIT_MB}M), every element verified.")
    (out / "hostile_network.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--ports-only", action="store_true")
    parser.add_argument("--reduce-server", type=Path, help="reducer binary (default: the build's)")
    parser.add_argument("--skip-memory-check", action="store_true",
                        help="no peak-RSS check (a sanitizer's quarantine is not the reducer's)")
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
