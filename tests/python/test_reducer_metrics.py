# SPDX-License-Identifier: BSD-3-Clause
"""reduce-server --metrics: the Prometheus text a reducer serves, scraped while and after a real
job runs through it, parsed by prometheus_client's own parser, counted exactly against what the
job moved, scraped by Debian's Prometheus server (with the job's ranks) and queried through its
API; and what the endpoint answers to anything but a scrape."""

import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import assert_all_ok, free_port, run_ranks

prometheus_client = pytest.importorskip("prometheus_client.parser")

COUNT, ITERS = 100_000, 6  # per rank and operation: 400,000 bytes of float32


def scrape(address):
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


def samples(text):
    """{(name, frozenset(labels)): value} through prometheus_client's parser (which raises on
    anything malformed)."""
    out = {}
    for family in prometheus_client.text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(found, name, **labels):
    return found[(name, frozenset(labels.items()))]


def run_sums(reducers, addresses):
    results = run_ranks("core_worker.py", 2, ["sums", COUNT, ITERS], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=90)
    assert_all_ok(results)
    assert all("SUMS OK" in out for _, out in results), results


def test_counters_equal_what_the_job_moved(reducers):
    addresses = reducers.start(1, flags=["--metrics", "127.0.0.1:0"])
    before = samples(scrape(reducers.metrics[0]))
    assert value(before, "libreduce_reducer_received_bytes_total") == 0
    assert value(before, "libreduce_reducer_memory_limit_bytes") == 256 << 20
    run_sums(reducers, addresses)
    after = samples(scrape(reducers.metrics[0]))
    moved = 2 * COUNT * 4 * ITERS  # each of 2 ranks contributes its buffer to every operation
    assert value(after, "libreduce_reducer_received_bytes_total") == moved
    assert value(after, "libreduce_reducer_sent_bytes_total") == moved  # the sum to both ranks
    assert value(after, "libreduce_reducer_operations_served_total") == ITERS
    assert value(after, "libreduce_reducer_operations_failed_total") == 0
    assert value(after, "libreduce_reducer_reductions_total") > 0
    assert value(after, "libreduce_reducer_joins_refused_total", cause="authentication") == 0
    assert value(after, "process_cpu_seconds_total") > 0
    assert value(after, "libreduce_reducer_communicators") == 0  # the job ended and left


def test_refusals_are_counted_by_cause(reducers, tmp_path):
    addresses = reducers.start(1, flags=["--metrics", "0"])  # a bare port: loopback
    assert reducers.metrics[0].startswith("127.0.0.1:")
    # 2 ranks x 64 MiB chunks and their state exceed a communicator's half of 256 MiB.
    results = run_ranks("core_worker.py", 2, ["join"], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=60,
                        extra={"LIBREDUCE_CHUNK_BYTES": "64M"})
    assert all("OutOfMemoryError" in out for _, out in results), results
    found = samples(scrape(reducers.metrics[0]))
    assert value(found, "libreduce_reducer_joins_refused_total", cause="memory") >= 1
    assert value(found, "libreduce_reducer_joins_refused_total", cause="authentication") == 0
    assert value(found, "libreduce_reducer_chunks_received_total") == 0
    # A wrong key is refused by the handshake, before any join.
    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-secret\n")
    wrong.chmod(0o600)
    results = run_ranks("core_worker.py", 2, ["join"], reducers=addresses, secret_file=wrong,
                        timeout=60)
    assert all("AuthError" in out for _, out in results), results
    found = samples(scrape(reducers.metrics[0]))
    assert value(found, "libreduce_reducer_handshakes_refused_total") >= 1
    assert value(found, "libreduce_reducer_joins_refused_total", cause="authentication") == 0


def request(address, raw, read=True):
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(raw)
        if not read:
            return b""
        data = b""
        while True:
            part = s.recv(65536)
            if not part:
                return data
            data += part


def test_anything_but_a_scrape_gets_an_error_or_a_close(reducers):
    reducers.start(1, flags=["--metrics", "127.0.0.1:0"])
    m = reducers.metrics[0]
    assert request(m, b"GET / HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 404 ")
    assert request(m, b"POST /metrics HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 405 ")
    assert request(m, b"\x16\x03\x01\x02\x00\n\n").startswith(b"HTTP/1.1 400 ")
    assert request(m, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000).startswith(b"HTTP/1.1 431 ")
    head = request(m, b"HEAD /metrics HTTP/1.1\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and head.endswith(b"\r\n\r\n")
    # 40 connections that never send a byte: beyond 32 the oldest are closed, the rest time out;
    # a scrape meanwhile is answered.
    idle = [socket.create_connection(tuple(m.rsplit(":", 1)[:1]) + (int(m.rsplit(":", 1)[1]),))
            for _ in range(40)]
    assert "libreduce_reducer_connections" in scrape(m)
    deadline = time.monotonic() + 10
    for s in idle:
        s.settimeout(max(0.1, deadline - time.monotonic()))
        assert s.recv(1) == b"", "an idle connection was held past the endpoint's deadline"
        s.close()


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="no prometheus server (Debian's "
                    "package 'prometheus', which scripts/setup.sh installs)")
def prometheus_query(port, expr):
    """The value of @p expr's single sample, or None while Prometheus has none."""
    query = urllib.parse.quote(expr)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?query={query}",
                                    timeout=5) as r:
            result = json.load(r)["data"]["result"]
    except (urllib.error.URLError, ConnectionError, KeyError):
        return None
    return float(result[0]["value"][1]) if len(result) == 1 else None


def test_prometheus_server_scrapes_a_reducer_and_the_workers_of_a_job(reducers, tmp_path):
    """Debian's Prometheus scrapes the reducer and both ranks while the job runs (the ranks stay
    after their all-reduces until told to go): its API answers with exactly what the job moved
    and the number of collectives it ran."""
    addresses = reducers.start(1, flags=["--metrics", "127.0.0.1:0"])
    worker_ports = [free_port() for _ in range(2)]
    release = tmp_path / "release"
    job = threading.Thread(target=lambda: results.extend(run_ranks(
        "core_worker.py", 2, ["sums", COUNT, ITERS, release], reducers=addresses,
        secret_file=reducers.secret_file, timeout=180,
        per_rank_extra={r: {"LIBREDUCE_METRICS": f"127.0.0.1:{p}"}
                        for r, p in enumerate(worker_ports)})))
    results = []
    job.start()
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(json.dumps({
        "global": {"scrape_interval": "1s"},
        "scrape_configs": [
            {"job_name": "reducers", "static_configs": [{"targets": [reducers.metrics[0]]}]},
            {"job_name": "workers",
             "static_configs": [{"targets": [f"127.0.0.1:{p}" for p in worker_ports]}]}]}))
    server = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    moved = 2 * COUNT * 4 * ITERS
    received = 'libreduce_reducer_received_bytes_total{job="reducers"}'
    collectives = ('sum(libreduce_collective_seconds_count{job="workers",'
                   'collective="AllReduce",message_size="390-391KB"})')
    try:
        deadline = time.monotonic() + 90
        got = (None, None)
        while time.monotonic() < deadline and got != (moved, 2 * ITERS):
            assert server.poll() is None, server.stderr.read()
            got = (prometheus_query(port, received), prometheus_query(port, collectives))
            time.sleep(0.2)
        assert got == (moved, 2 * ITERS), got
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/targets", timeout=5) as r:
            targets = json.load(r)["data"]["activeTargets"]
        assert sorted((t["labels"]["job"], t["health"]) for t in targets) == [
            ("reducers", "up"), ("workers", "up"), ("workers", "up")], targets
        # While the ranks are still connected, the reducer names what carries each connection:
        # UCX transports and devices ("tcp/lo"), every one settled by the operations that ran.
        live = samples(scrape(reducers.metrics[0]))
        carried = {dict(labels)["transports"]: v for (name, labels), v in live.items()
                   if name == "libreduce_reducer_connections_by_transport"}
        assert sum(carried.values()) == value(live, "libreduce_reducer_connections") == 4, live
        assert all(re.fullmatch(r"[\w-]+/[\w:.-]+(\+[\w-]+/[\w:.-]+)*", t) for t in carried), carried
    finally:
        release.touch()
        job.join(timeout=120)
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert_all_ok(results)
    assert all("SUMS OK" in out for _, out in results), results
