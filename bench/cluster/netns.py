# SPDX-License-Identifier: BSD-3-Clause
"""Emulated cluster network: one Linux network namespace per host, a bridge, tc rate caps.

Every worker and reducer gets its own network namespace with a single interface, ``eth0``, one
end of a veth pair. The other end of each pair sits in a dedicated "switch" namespace and is
enslaved to a bridge there, so the root namespace's networking is never touched. Each host's
link is capped in both directions with a token-bucket filter: on ``eth0`` inside the host (what
the host sends) and on the switch-side end (what the host receives). That turns a single
machine into a small cluster whose per-host NIC is the bottleneck, which is the regime where
reduction-server all-reduce should beat ring all-reduce.

Only addresses of the benchmarking range 198.18.0.0/15 are used (RFC 2544): workers get
198.18.0.<i+1>/16, reducers 198.18.1.<i+1>/16, and the bridge gets no address unless asked
(198.18.255.254/16). IPv6 is disabled inside every namespace so no link-local address appears.

Run as a script, this module also serves the link probe (``--probe-server`` / ``--probe-client``)
that measures the capped throughput between two namespaces.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

IP = "ip"
TC = "tc"
COMMAND_TIMEOUT_S = 20
WORKER_NET = "198.18.0"
REDUCER_NET = "198.18.1"
SWITCH_ADDR = "198.18.255.254"
PREFIX_LEN = 16
TBF_LATENCY = "50ms"
# A bucket smaller than a veth GSO super-packet (64 KiB + headers) makes tbf split every
# packet: the cap still holds but costs as much CPU as an uncapped link. Two packets it is.
TBF_MIN_BURST_BYTES = 128 * 1024
PROBE_PORT = 5201
_RATE_UNITS = {"": 1, "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}


class TopologyError(RuntimeError):
    """An `ip` / `tc` command failed while building or inspecting the topology."""


def parse_rate(text: str) -> float | None:
    """Bits per second of a tc-style rate ("1gbit", "500mbit"); None for "none" (uncapped)."""
    if text.strip().lower() in ("none", "0", "off", "uncapped"):
        return None
    match = re.fullmatch(r"\s*([0-9.]+)\s*([a-z]*)\s*", text.lower())
    if not match or match.group(2) not in _RATE_UNITS:
        raise ValueError(f"rate {text!r}: expected e.g. 1gbit, 500mbit or none")
    return float(match.group(1)) * _RATE_UNITS[match.group(2)]


def tbf_burst_bytes(rate_bps: float) -> int:
    """Bucket size: one millisecond at the rate, but never less than TBF_MIN_BURST_BYTES."""
    return max(TBF_MIN_BURST_BYTES, int(rate_bps / 8 / 1000))


def run_cmd(argv: list[str], timeout: float = COMMAND_TIMEOUT_S) -> str:
    """Runs a short administrative command; raises TopologyError with its stderr on failure."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TopologyError(f"{' '.join(argv)}: {exc}") from exc
    if done.returncode != 0:
        raise TopologyError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


@dataclasses.dataclass(frozen=True)
class Host:
    """One emulated machine: a namespace with `eth0` at `addr`."""

    name: str  # w0, w1, ..., r0, r1, ...
    netns: str
    addr: str

    def exec_prefix(self) -> list[str]:
        """Command prefix that runs a program inside this host's namespace."""
        return [IP, "netns", "exec", self.netns]


class Topology:
    """Workers and reducers, each in a namespace, joined by a capped bridge.

    Use as a context manager, or call create() and destroy() (destroy is idempotent and
    removes every namespace this object created, even after a partial create()).
    """

    def __init__(self, prefix: str, workers: int, reducers: int, rate: str,
                 switch_address: bool = False, reducer_rate: str | None = None):
        if not 1 <= workers <= 254 or not 0 <= reducers <= 254:
            raise ValueError("between 1 and 254 workers and at most 254 reducers")
        self.prefix = prefix
        self.rate = rate
        self.rate_bps = parse_rate(rate)
        # Reducers may have NICs of their own size (reducectl: the pools' resources.nicGbps).
        self.reducer_rate_bps = self.rate_bps if reducer_rate is None else parse_rate(reducer_rate)
        self.switch_address = switch_address
        self.switch_ns = f"{prefix}-sw"
        self.workers = [Host(f"w{i}", f"{prefix}-w{i}", f"{WORKER_NET}.{i + 1}")
                        for i in range(workers)]
        self.reducers = [Host(f"r{i}", f"{prefix}-r{i}", f"{REDUCER_NET}.{i + 1}")
                         for i in range(reducers)]
        self._created: list[str] = []

    @property
    def hosts(self) -> list[Host]:
        return self.workers + self.reducers

    def __enter__(self) -> "Topology":
        self.create()
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()

    # -- building -------------------------------------------------------------------------------

    def create(self) -> None:
        """Creates the switch namespace with its bridge, then every host with its capped link."""
        self._add_netns(self.switch_ns)
        sw = [IP, "-n", self.switch_ns]
        run_cmd(sw + ["link", "add", "dev", "br0", "type", "bridge"])
        if self.switch_address:
            run_cmd(sw + ["addr", "add", f"{SWITCH_ADDR}/{PREFIX_LEN}", "dev", "br0"])
        run_cmd(sw + ["link", "set", "dev", "br0", "up"])
        for host in self.hosts:
            self._add_host(host)

    def _add_netns(self, name: str) -> None:
        self._created.append(name)  # first, so an interruption cannot leak it
        run_cmd([IP, "netns", "add", name])
        run_cmd([IP, "netns", "exec", name, "sysctl", "-q", "-w",
                 "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"])
        run_cmd([IP, "-n", name, "link", "set", "dev", "lo", "up"])

    def _add_host(self, host: Host) -> None:
        """Namespace, veth pair (eth0 inside, host.name on the bridge), address, caps."""
        self._add_netns(host.netns)
        inside = [IP, "-n", host.netns]
        sw = [IP, "-n", self.switch_ns]
        run_cmd(inside + ["link", "add", "dev", "eth0", "type", "veth",
                          "peer", "name", host.name, "netns", self.switch_ns])
        run_cmd(sw + ["link", "set", "dev", host.name, "master", "br0"])
        run_cmd(sw + ["link", "set", "dev", host.name, "up"])
        run_cmd(inside + ["addr", "add", f"{host.addr}/{PREFIX_LEN}", "dev", "eth0"])
        run_cmd(inside + ["link", "set", "dev", "eth0", "up"])
        rate = self.reducer_rate_bps if host in self.reducers else self.rate_bps
        if rate is not None:
            self._cap(host.netns, "eth0", rate)           # what the host sends
            self._cap(self.switch_ns, host.name, rate)    # what the host receives

    @staticmethod
    def _cap(netns: str, dev: str, rate_bps: float) -> None:
        burst = tbf_burst_bytes(rate_bps)
        run_cmd([TC, "-n", netns, "qdisc", "replace", "dev", dev, "root", "tbf",
                 "rate", f"{int(rate_bps)}bit", "burst", str(burst),
                 "latency", TBF_LATENCY])

    # -- teardown -------------------------------------------------------------------------------

    def destroy(self) -> list[str]:
        """Deletes every namespace created (their veths go with them); returns the errors."""
        errors = []
        for name in reversed(self._created):
            if not Path(f"/run/netns/{name}").exists():
                continue
            try:
                run_cmd([IP, "netns", "del", name])
            except TopologyError as exc:
                errors.append(str(exc))
        self._created.clear()
        return errors

    def kill_processes(self, timeout: float = 5.0) -> list[int]:
        """SIGKILLs every process still inside one of this topology's namespaces.

        The namespaces are unique to this run, so whatever runs in them was started by it
        (a rank that escaped its process group, say). Returns the pids that were killed.
        """
        killed = []
        for name in self._created:
            try:
                pids = [int(p) for p in run_cmd([IP, "netns", "pids", name]).split()]
            except TopologyError:
                continue
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + timeout
        while any(_alive(pid) for pid in killed) and time.monotonic() < deadline:
            time.sleep(0.05)
        return killed

    # -- inspection -----------------------------------------------------------------------------

    def describe(self) -> dict:
        """What was built, for meta.json."""
        burst = tbf_burst_bytes(self.rate_bps) if self.rate_bps else None
        return {
            "prefix": self.prefix,
            "switch_netns": self.switch_ns,
            "rate": self.rate,
            "tbf": {"burst_bytes": burst, "latency": TBF_LATENCY} if burst else None,
            "hosts": {h.name: {"netns": h.netns, "addr": f"{h.addr}/{PREFIX_LEN}"}
                      for h in self.hosts},
            "switch_addr": f"{SWITCH_ADDR}/{PREFIX_LEN}" if self.switch_address else None,
        }

    def link_counters(self) -> dict[str, dict[str, int]]:
        """Per host: bytes eth0 sent and received (shows traffic really crossed the links) and
        packets the two rate caps dropped (a queue overflowing at the cap)."""
        counters = {}
        for host in self.hosts:
            data = json.loads(run_cmd([IP, "-n", host.netns, "-j", "-s", "link", "show",
                                       "dev", "eth0"]))
            stats = data[0]["stats64"]
            drops = (self._qdisc_drops(host.netns, "eth0")
                     + self._qdisc_drops(self.switch_ns, host.name))
            counters[host.name] = {"tx": stats["tx"]["bytes"], "rx": stats["rx"]["bytes"],
                                   "drops": drops}
        return counters

    @staticmethod
    def _qdisc_drops(netns: str, dev: str) -> int:
        data = json.loads(run_cmd([TC, "-n", netns, "-s", "-j", "qdisc", "show", "dev", dev]))
        return sum(int(q.get("drops", 0)) for q in data)

    def measure_throughput(self, sender: Host, receiver: Host, seconds: float = 1.0) -> float:
        """Bits per second one TCP stream achieves from sender to receiver (receiver's count)."""
        script = str(Path(__file__).resolve())
        server = subprocess.Popen(
            receiver.exec_prefix() + [sys.executable, script, "--probe-server", receiver.addr],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            run_cmd(sender.exec_prefix() + [sys.executable, script, "--probe-client",
                                            receiver.addr, "--seconds", str(seconds)],
                    timeout=seconds + 15)
            out, err = server.communicate(timeout=15)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
        if server.returncode != 0:
            raise TopologyError(f"link probe failed: {err.strip()}")
        return float(out.strip())


def _alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def stale_namespaces(prefix: str) -> list[str]:
    """Namespaces whose name starts with prefix (left over by a run that was killed hard)."""
    out = run_cmd([IP, "netns", "list"])
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    return [name for name in names if name.startswith(prefix)]


# -- link probe (runs inside the namespaces) -----------------------------------------------------

def _probe_server(addr: str) -> None:
    """Accepts one connection, drains it, prints bits/s from the first to the last byte."""
    with socket.create_server((addr, PROBE_PORT)) as srv:
        srv.settimeout(15)
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(15)
            total, start = 0, None
            while data := conn.recv(1 << 20):
                start = start or time.monotonic()
                total += len(data)
            elapsed = time.monotonic() - (start or time.monotonic())
    print(total * 8 / elapsed if elapsed > 0 else 0.0)


def _probe_client(addr: str, seconds: float) -> None:
    """Sends as fast as the link allows for `seconds` (the server may still be binding)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            conn = socket.create_connection((addr, PROBE_PORT), timeout=15)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    payload = b"\0" * (1 << 18)
    with conn:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            conn.sendall(payload)


def destroy_prefix(prefix: str) -> list[str]:
    """Kills what runs in, and deletes, every namespace named PREFIX-*; returns the errors."""
    errors = []
    for name in stale_namespaces(prefix + "-"):
        try:
            for pid in run_cmd([IP, "netns", "pids", name]).split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            run_cmd([IP, "netns", "del", name])
        except TopologyError as exc:
            errors.append(str(exc))
    return errors


def _create(args) -> int:
    """--create: builds a topology and leaves it up (reducectl --emulate-network runs the job
    in it and calls --destroy at the end); prints describe() as JSON. On failure nothing stays."""
    topo = Topology(args.create, args.workers, args.reducers, args.rate,
                    reducer_rate=args.reducer_rate)
    try:
        topo.create()
    except (TopologyError, OSError) as exc:
        topo.destroy()
        print(f"netns: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(topo.describe()))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe-server", metavar="ADDR")
    parser.add_argument("--probe-client", metavar="ADDR")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--create", metavar="PREFIX", help="build a topology and leave it up")
    parser.add_argument("--destroy", metavar="PREFIX", help="remove the PREFIX-* namespaces")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--reducers", type=int, default=0)
    parser.add_argument("--rate", default="none", help="workers' links, e.g. 1gbit")
    parser.add_argument("--reducer-rate", help="reducers' links (default: --rate)")
    args = parser.parse_args()
    if args.probe_server:
        _probe_server(args.probe_server)
    elif args.probe_client:
        _probe_client(args.probe_client, args.seconds)
    elif args.create:
        return _create(args)
    elif args.destroy:
        errors = destroy_prefix(args.destroy)
        for error in errors:
            print(f"netns: {error}", file=sys.stderr)
        return 1 if errors else 0
    else:
        parser.error("--probe-server, --probe-client, --create or --destroy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
