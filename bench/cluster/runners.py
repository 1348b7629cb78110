# SPDX-License-Identifier: BSD-3-Clause
"""How each all-reduce system is started inside an emulated topology, with bounded waits.

One function per system starts its processes in the hosts' network namespaces (reducers first
for rs), waits for the workers under a deadline and collects rank 0's nccl-tests style JSON.
Every process runs in its own session and writes its stdout and stderr to a log file; whatever
happens, everything started for a run is stopped before the next one begins (SIGTERM, then
SIGKILL after a grace period), and any process still inside one of the run's namespaces is
killed too.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import netns

SYSTEMS = ("rs", "auto", "ring", "gloo", "mpi", "rs-bf16", "rs-fp16", "auto-same")
# rs with wire compression: float32 travels to the reducers as this type (LIBREDUCE_WIRE_DTYPE).
WIRE_SYSTEMS = {"rs-bf16": "bf16", "rs-fp16": "fp16"}
# Algorithms in the same processes, interleaved (rd_perf --algo auto,rs,ring by default, or
# RunContext.same_algos): its rows are named "auto-same:<algo>".
SAME_PROCESS_SYSTEM = "auto-same"
# Systems run only when --systems names them.
OPT_IN_SYSTEMS = set(WIRE_SYSTEMS) | {SAME_PROCESS_SYSTEM}
POLL_S = 0.2                 # sleep between checks of running processes (never busy-wait)
READY_TIMEOUT_S = 20.0       # a reducer must report its address within this
FAILURE_GRACE_S = 15.0       # after one rank fails, the others get this long to notice
STOP_GRACE_S = 5.0           # SIGTERM -> SIGKILL
MASTER_PORT_BASE = 29500
# Variables that name a process's place in some other job: never inherited by the ranks.
_IDENTITY_VARS = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                  "MASTER_PORT", "LIBREDUCE_REDUCERS", "LIBREDUCE_ALGO", "LIBREDUCE_RANK",
                  "LIBREDUCE_WORLD_SIZE", "LIBREDUCE_COMM_ID", "LIBREDUCE_LISTEN_HOST"}
_IDENTITY_PREFIXES = ("OMPI_", "PMIX_", "PMI_", "SLURM_", "GLOO_")


@dataclasses.dataclass
class Binaries:
    """Programs the systems need; None where not built or not installed."""

    reduce_server: Path | None
    rd_perf: Path | None
    gloo_perf: Path | None
    mpi_perf: Path | None
    mpirun: Path | None

    @classmethod
    def find(cls, build_dir: Path) -> "Binaries":
        def first(*candidates: str) -> Path | None:
            for rel in candidates:
                path = (build_dir / rel).resolve()
                if path.is_file() and os.access(path, os.X_OK):
                    return path
            return None
        mpirun = shutil.which("mpirun")
        return cls(reduce_server=first("src/reduce-server"),
                   rd_perf=first("bench/rd_perf", "bench/perf/rd_perf"),
                   gloo_perf=first("bench/gloo_perf", "bench/baselines/gloo_perf"),
                   mpi_perf=first("bench/mpi_perf", "bench/baselines/mpi_perf"),
                   mpirun=Path(mpirun) if mpirun else None)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def missing_by_system(self) -> dict[str, str]:
        """{system: what is missing} for the systems that cannot run."""
        needs = {"rs": ["reduce_server", "rd_perf"], "auto": ["reduce_server", "rd_perf"],
                 **{s: ["reduce_server", "rd_perf"] for s in OPT_IN_SYSTEMS},
                 "ring": ["rd_perf"], "gloo": ["gloo_perf"],
                 "mpi": ["mpi_perf", "mpirun"]}
        missing = {}
        for system, fields in needs.items():
            absent = [f.replace("_", "-") if f == "reduce_server" else f
                      for f in fields if getattr(self, f) is None]
            if absent:
                missing[system] = "not built/installed: " + ", ".join(absent)
        return missing


@dataclasses.dataclass
class RunContext:
    """Everything one run of one system needs."""

    topo: netns.Topology
    system: str
    binaries: Binaries
    log_dir: Path
    work_dir: Path
    perf_flags: list[str]
    comm_id: str
    timeout_s: float
    ucx_tls: str
    master_port: int = MASTER_PORT_BASE
    rounds: int = 5             # auto-same: timed rounds per size
    same_algos: str = "auto,rs,ring"  # auto-same: the algorithms, the first against the rest

    @property
    def json_path(self) -> Path:
        return self.log_dir / "rank0.json"


@dataclasses.dataclass
class Outcome:
    status: str                 # ok | failed | timeout
    note: str = ""
    wall_s: float = 0.0
    command: str = ""
    doc: dict | None = None
    reducer_cpu_s: float | None = None  # all reducers' user + system CPU (their own report)


class ProcessSet:
    """Processes of one run, each in its own session (so a signal reaches its children)."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str], env: dict) -> subprocess.Popen:
        with open(self.log_dir / f"{name}.log", "wb") as log:
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def log_tail(self, name: str, chars: int = 300) -> str:
        try:
            text = (self.log_dir / f"{name}.log").read_text(errors="replace").strip()
        except OSError:
            return ""
        return " ".join(text[-chars:].split())

    def stop(self, names: list[str] | None = None, sig: int = signal.SIGTERM) -> None:
        """Signals the process groups, waits up to STOP_GRACE_S, then SIGKILLs what is left."""
        targets = [self.procs[n] for n in (names or list(self.procs))]
        for proc in targets:
            _signal_group(proc, sig)
        deadline = time.monotonic() + STOP_GRACE_S
        for proc in targets:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                try:
                    proc.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    pass  # stuck in the kernel; the namespace sweep and teardown follow


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:  # the leader may have left the group; signal it directly too
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass


def wait_ranks(procs: ProcessSet, names: list[str], timeout_s: float) -> tuple[str, str]:
    """Waits for every named process: ("ok", ""), ("failed", why) or ("timeout", why).

    When one rank fails the others usually fail too once their own timeouts fire; they get
    FAILURE_GRACE_S to do so before they are killed, so their logs say what they saw.
    """
    deadline = time.monotonic() + timeout_s
    failed_at = None
    while True:
        codes = {n: procs.procs[n].poll() for n in names}
        failed = {n: c for n, c in codes.items() if c not in (None, 0)}
        running = [n for n, c in codes.items() if c is None]
        now = time.monotonic()
        if failed and failed_at is None:
            failed_at = now
        if not running:
            break
        if now >= deadline:
            return "timeout", (f"killed after {timeout_s:.0f} s; still running: "
                               f"{', '.join(running)}" + _failure_note(procs, failed))
        if failed_at is not None and now - failed_at > FAILURE_GRACE_S:
            return "failed", (f"still running {FAILURE_GRACE_S:.0f} s after a failure: "
                              f"{', '.join(running)}" + _failure_note(procs, failed))
        time.sleep(POLL_S)
    if failed:
        return "failed", _failure_note(procs, failed).lstrip("; ")
    return "ok", ""


def _failure_note(procs: ProcessSet, failed: dict[str, int]) -> str:
    if not failed:
        return ""
    first = next(iter(failed))
    codes = ", ".join(f"{n} rc={c}" for n, c in failed.items())
    return f"; {codes}; {first}: {procs.log_tail(first)}"


# -- environments ---------------------------------------------------------------------------------

def base_env() -> dict:
    """This process's environment minus anything that places a process in another job."""
    return {k: v for k, v in os.environ.items()
            if k not in _IDENTITY_VARS and not k.startswith(_IDENTITY_PREFIXES)}


def secret_file(ctx: RunContext) -> Path:
    """The run's job secret, readable by its owner only (made by run_system)."""
    return ctx.work_dir / "job.secret"


def write_secret(ctx: RunContext) -> None:
    path = secret_file(ctx)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")


def libreduce_env(ctx: RunContext, rank: int | None, host: netns.Host) -> dict:
    """Environment of a libreduce process (worker when rank is given, else a reducer)."""
    env = base_env()
    # Reducers listen on the namespaces' addresses, which reduce-server refuses without a secret.
    env.update({"UCX_TLS": ctx.ucx_tls, "UCX_NET_DEVICES": "eth0",
                "LIBREDUCE_SECRET_FILE": str(secret_file(ctx))})
    if rank is not None:
        env.update({"RANK": str(rank), "WORLD_SIZE": str(len(ctx.topo.workers)),
                    "MASTER_ADDR": ctx.topo.workers[0].addr, "MASTER_PORT": str(ctx.master_port),
                    "LIBREDUCE_COMM_ID": ctx.comm_id, "LIBREDUCE_LISTEN_HOST": host.addr})
    return env


# -- the systems ----------------------------------------------------------------------------------

def run_system(ctx: RunContext) -> Outcome:
    """Runs ctx.system once; never raises for a failing benchmark, always cleans up."""
    ctx.log_dir.mkdir(parents=True, exist_ok=True)
    ctx.work_dir.mkdir(parents=True, exist_ok=True)
    write_secret(ctx)
    ctx.json_path.unlink(missing_ok=True)
    procs = ProcessSet(ctx.log_dir)
    started = time.monotonic()
    try:
        runner = {"rs": _run_rs, "auto": _run_auto, "ring": _run_ring, "gloo": _run_gloo,
                  "mpi": _run_mpi, **{s: _run_compressed for s in WIRE_SYSTEMS},
                  SAME_PROCESS_SYSTEM: _run_same_processes}[ctx.system]
        outcome = runner(ctx, procs)
    finally:
        procs.stop()
        leftovers = ctx.topo.kill_processes()
    if leftovers:
        outcome.note = (outcome.note + "; " if outcome.note else "") + \
            f"killed {len(leftovers)} leftover processes in the namespaces"
    outcome.wall_s = time.monotonic() - started
    if outcome.status == "ok":
        outcome.doc = _load_json(ctx.json_path, outcome)
    return outcome


def _load_json(path: Path, outcome: Outcome) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        outcome.status, outcome.note = "failed", f"rank 0's JSON {path}: {exc}"
        return None


def _start_workers(ctx: RunContext, procs: ProcessSet, program: list[str], env_for) -> str:
    """Starts one rank per worker host; returns rank 0's command line."""
    argv0 = ""
    for rank, host in enumerate(ctx.topo.workers):
        argv = host.exec_prefix() + program + ctx.perf_flags + ["-J", str(ctx.json_path)]
        procs.start(host.name, argv, env_for(rank, host))
        argv0 = argv0 or shlex.join(argv)
    return argv0


def _finish_workers(ctx: RunContext, procs: ProcessSet, command: str) -> Outcome:
    names = [h.name for h in ctx.topo.workers]
    status, note = wait_ranks(procs, names, ctx.timeout_s)
    return Outcome(status=status, note=note, command=command)


def start_reducers(ctx: RunContext, procs: ProcessSet) -> list[str]:
    """Starts a reduce-server in every reducer namespace; returns their HOST:PORT addresses."""
    ready_files = {}
    for host in ctx.topo.reducers:
        ready = ctx.work_dir / f"{host.name}.ready"
        ready.unlink(missing_ok=True)
        argv = host.exec_prefix() + [str(ctx.binaries.reduce_server), "--listen",
                                     f"{host.addr}:0", "--ready-file", str(ready)]
        procs.start(host.name, argv, libreduce_env(ctx, None, host))
        ready_files[host.name] = ready
    return [_wait_ready(procs, name, path) for name, path in ready_files.items()]


def _wait_ready(procs: ProcessSet, name: str, path: Path) -> str:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if path.is_file():
            match = re.search(r"LIBREDUCE_REDUCER_READY address=(\S+)", path.read_text())
            if match:
                return match.group(1)
        if procs.procs[name].poll() is not None:
            raise RuntimeError(f"reducer {name} exited with rc={procs.procs[name].returncode}: "
                               f"{procs.log_tail(name)}")
        time.sleep(POLL_S / 2)
    raise RuntimeError(f"reducer {name} not ready within {READY_TIMEOUT_S:.0f} s: "
                       f"{procs.log_tail(name)}")


def _run_rs(ctx: RunContext, procs: ProcessSet, algo: str = "rs",
            extra: list[str] | None = None) -> Outcome:
    try:
        addresses = start_reducers(ctx, procs)
    except RuntimeError as exc:
        return Outcome(status="failed", note=str(exc))
    program = [str(ctx.binaries.rd_perf), "--algo", algo, "--reducers", ",".join(addresses)]
    program += extra or []
    command = _start_workers(ctx, procs, program,
                             lambda rank, host: libreduce_env(ctx, rank, host))
    outcome = _finish_workers(ctx, procs, command)
    died = [h.name for h in ctx.topo.reducers if procs.procs[h.name].poll() is not None]
    procs.stop([h.name for h in ctx.topo.reducers], signal.SIGTERM)
    outcome.reducer_cpu_s = reducer_cpu_seconds(procs, [h.name for h in ctx.topo.reducers])
    if died:
        outcome.note = (outcome.note + "; " if outcome.note else "") + \
            f"reducers exited during the run: {', '.join(died)}"
        outcome.status = "failed" if outcome.status == "ok" else outcome.status
    return outcome


def _run_auto(ctx: RunContext, procs: ProcessSet) -> Outcome:
    """rd_perf through the reducers with LIBREDUCE_ALGO=auto: rs or ring, chosen per size."""
    return _run_rs(ctx, procs, algo="auto")


def _run_compressed(ctx: RunContext, procs: ProcessSet) -> Outcome:
    """rs with float32 on the wire as bf16 / fp16, summed in float32 by the reducers."""
    return _run_rs(ctx, procs, extra=["--wire-dtype", WIRE_SYSTEMS[ctx.system]])


def _run_same_processes(ctx: RunContext, procs: ProcessSet) -> Outcome:
    """Several algorithms, each in its own communicator in the same ranks, measured interleaved."""
    return _run_rs(ctx, procs, algo=ctx.same_algos, extra=["--rounds", str(ctx.rounds)])


def reducer_cpu_seconds(procs: ProcessSet, names: list[str]) -> float | None:
    """Sum of the CPU time each stopped reducer reported; None if one did not."""
    total = 0.0
    for name in names:
        try:
            text = (procs.log_dir / f"{name}.log").read_text(errors="replace")
        except OSError:
            return None
        match = re.search(r"LIBREDUCE_REDUCER_CPU user_s=([0-9.]+) sys_s=([0-9.]+)", text)
        if not match:
            return None
        total += float(match.group(1)) + float(match.group(2))
    return total


def _run_ring(ctx: RunContext, procs: ProcessSet) -> Outcome:
    program = [str(ctx.binaries.rd_perf), "--algo", "ring"]
    command = _start_workers(ctx, procs, program,
                             lambda rank, host: libreduce_env(ctx, rank, host))
    return _finish_workers(ctx, procs, command)


def _run_gloo(ctx: RunContext, procs: ProcessSet) -> Outcome:
    store = ctx.work_dir / "gloo-store"
    shutil.rmtree(store, ignore_errors=True)
    store.mkdir(parents=True)

    def env_for(rank: int, _host: netns.Host) -> dict:
        env = base_env()
        env.update({"RANK": str(rank), "WORLD_SIZE": str(len(ctx.topo.workers)),
                    "GLOO_STORE_DIR": str(store), "GLOO_PREFIX": ctx.comm_id,
                    "GLOO_IFACE": "eth0", "MASTER_ADDR": ctx.topo.workers[0].addr,
                    "MASTER_PORT": str(ctx.master_port)})
        return env
    command = _start_workers(ctx, procs, [str(ctx.binaries.gloo_perf)], env_for)
    return _finish_workers(ctx, procs, command)


def _run_mpi(ctx: RunContext, procs: ProcessSet) -> Outcome:
    """mpirun runs in the switch namespace (bridge at 198.18.255.254); each rank enters its
    host's namespace through a wrapper and reaches mpirun's PMIx server over TCP on the bridge
    (PMIx's default loopback listener is not reachable from another namespace)."""
    wrapper = ctx.work_dir / "mpi-rank-netns.sh"
    wrapper.write_text("#!/bin/sh\n# Runs one MPI rank inside its emulated host's namespace.\n"
                       f'exec {netns.IP} netns exec "{ctx.topo.prefix}-w$OMPI_COMM_WORLD_RANK" '
                       '"$@"\n')
    wrapper.chmod(0o755)
    env = base_env()
    env.update({"PMIX_MCA_ptl_tcp_remote_connections": "1", "PMIX_MCA_ptl_tcp_if_include": "br0",
                "MASTER_ADDR": ctx.topo.workers[0].addr, "MASTER_PORT": str(ctx.master_port)})
    argv = [netns.IP, "netns", "exec", ctx.topo.switch_ns, str(ctx.binaries.mpirun),
            "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
            "-np", str(len(ctx.topo.workers)),
            "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", "eth0", "--mca", "oob_tcp_if_include", "br0",
            "-x", "MASTER_ADDR", "-x", "MASTER_PORT",
            str(wrapper), str(ctx.binaries.mpi_perf)] + ctx.perf_flags + \
        ["-J", str(ctx.json_path)]
    procs.start("mpirun", argv, env)
    status, note = wait_ranks(procs, ["mpirun"], ctx.timeout_s)
    return Outcome(status=status, note=note, command=shlex.join(argv))
