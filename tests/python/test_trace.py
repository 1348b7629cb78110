# SPDX-License-Identifier: BSD-3-Clause
"""LIBREDUCE_TRACE: the timeline of a 4-rank job through 2 reducers. Every operation is on every
rank with its phases inside it and in order, every reducer chunk with its phases, the files of
all six processes merged by `reducectl trace merge` into one file that loads as Chrome trace
JSON; SIGUSR1 writes a running reducer's file; a file that is not a timeline is left out by
name and loses the others nothing."""

import json
import os
import re
import signal
import subprocess
import time

from conftest import BUILD, ROOT, assert_all_ok, run_ranks

REDUCECTL = BUILD / "src" / "reducectl"
RANKS, COUNT, ITERS = 4, 300_000, 5  # 1.2 MB per rank and operation: several chunks


def spans(events, **match):
    return [e for e in events if e.get("ph") == "X" and all(e.get(k) == v for k, v in match.items())]


def inside(inner, outer, slack_us=1.0):
    return (outer["ts"] - slack_us <= inner["ts"] and
            inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + slack_us)


def in_order(phases, slack_us=1.0):
    return all(a["ts"] + a["dur"] <= b["ts"] + slack_us for a, b in zip(phases, phases[1:]))


def merge(out, *inputs):
    return subprocess.run([str(REDUCECTL), "trace", "merge", *map(str, inputs), "-o", str(out)],
                          capture_output=True, text=True, timeout=60)


def plot_step(merged, png):
    """bench/trace/plot_step.py draws one operation of the merged file (Debian's matplotlib,
    which setup installs for the system's python3)."""
    script = ROOT / "bench" / "trace" / "plot_step.py"
    done = subprocess.run(["/usr/bin/python3", str(script), str(merged), str(png)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert png.stat().st_size > 10_000
    assert re.search(r"operation \d+: \d+ rows", done.stdout), done.stdout


def test_a_job_through_two_reducers_is_on_one_timeline(reducers, tmp_path, monkeypatch):
    trace_dir = tmp_path / "trace"
    monkeypatch.setenv("LIBREDUCE_TRACE", str(trace_dir))
    addresses = reducers.start(2)
    results = run_ranks("core_worker.py", RANKS, ["sums", COUNT, ITERS], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=120,
                        extra={"LIBREDUCE_TRACE": str(trace_dir)})
    assert_all_ok(results)
    reducers.stop()  # SIGTERM: each reducer writes its file as it exits
    files = sorted(trace_dir.glob("libreduce-*.json"))
    assert len(files) == RANKS + 2, files

    merged = tmp_path / "job-trace.json"
    done = merge(merged, trace_dir)
    assert done.returncode == 0, done.stderr
    assert "merged 6 timelines" in done.stdout
    events = json.loads(merged.read_text())  # Chrome's JSON array format
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert sorted(names.values())[:RANKS] == [f"rank {r} of {RANKS}" for r in range(RANKS)]
    assert sum(n.startswith("reducer ") for n in names.values()) == 2
    assert all(e["args"]["spans_dropped"] == 0 for e in events if e.get("name") == "process_name")

    for pid, name in names.items():
        if not name.startswith("rank "):
            continue
        ops = spans(events, pid=pid, cat="op")
        assert sorted(o["args"]["op"] for o in ops) == list(range(len(ops))), name
        assert len(ops) >= ITERS and all(o["name"] == "AllReduce" for o in ops)
        for op in ops:
            phases = sorted((p for p in spans(events, pid=pid, cat="phase")
                             if p["args"]["op"] == op["args"]["op"]), key=lambda p: p["ts"])
            assert [p["name"] for p in phases] == ["queued", "transfer", "finish"], (name, op)
            assert all(inside(p, op) for p in phases) and in_order(phases), (name, op, phases)
    ops_of = [sorted(o["args"]["op"] for o in spans(events, pid=pid, cat="op"))
              for pid, name in names.items() if name.startswith("rank ")]
    assert all(ops == ops_of[0] for ops in ops_of), "every operation on every rank"

    chunks = [c for pid, name in names.items() if name.startswith("reducer ")
              for c in spans(events, pid=pid, cat="chunk")]
    # Through the reducers: the operations the ranks ran with RS (auto tries the ring too).
    rs_ops = {o["args"]["op"] for o in spans(events, cat="op") if o["args"]["algorithm"] == "RS"}
    assert len(rs_ops) >= 2 and {c["args"]["op"] for c in chunks} == rs_ops
    for chunk in chunks:
        phases = sorted((p for p in spans(events, pid=chunk["pid"], cat="phase")
                         if p["args"]["op"] == chunk["args"]["op"] and
                         p["args"]["chunk"] == chunk["args"]["chunk"]), key=lambda p: p["ts"])
        assert [p["name"] for p in phases] == ["gather", "reduce", "send"], chunk
        assert all(inside(p, chunk) for p in phases) and in_order(phases), (chunk, phases)
    plot_step(merged, tmp_path / "step.png")
    # One clock: a reducer serves a chunk of an operation while that operation runs on the ranks.
    first_op = min(spans(events, cat="op"), key=lambda o: o["ts"])
    assert any(c["args"]["op"] == first_op["args"]["op"] and inside(c, first_op, slack_us=1000)
               for c in chunks)


def test_sigusr1_writes_a_running_reducers_timeline(reducers, tmp_path, monkeypatch):
    trace_dir = tmp_path / "trace"
    monkeypatch.setenv("LIBREDUCE_TRACE", str(trace_dir))
    addresses = reducers.start(1)
    results = run_ranks("core_worker.py", 2, ["sums", 1000, 3], reducers=addresses,
                        secret_file=reducers.secret_file, timeout=60)
    assert_all_ok(results)
    proc = reducers.procs[0]
    path = trace_dir / f"libreduce-{os.uname().nodename}-{proc.pid}.json"
    assert not path.exists()
    proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 20
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), "SIGUSR1 wrote no timeline"
    assert proc.poll() is None, "the reducer kept running"
    events = json.loads(path.read_text())
    assert len(spans(events, cat="chunk")) >= 3


def test_merge_leaves_out_what_is_not_a_timeline(tmp_path):
    good = tmp_path / "libreduce-a-1.json"
    good.write_text('[\n{"name": "process_name", "ph": "M", "pid": 7, "tid": 0, '
                    '"args": {"name": "rank 0 of 1", "spans_dropped": 0}},\n'
                    '{"name": "AllReduce", "cat": "op", "ph": "X", "ts": 1.000, "dur": 2.000, '
                    '"pid": 7, "tid": 0, "args": {"comm": "00", "op": 0, "bytes": 4}}\n]\n')
    (tmp_path / "libreduce-b-2.json").write_text('[\n{"name": "x", "ph": "X", "pid": 3, "ts": 1}')
    (tmp_path / "libreduce-c-3.json").write_text("garbage\n")
    (tmp_path / "libreduce-d-4.json").write_text('[\n{"evil": "line"}\n]\n')
    out = tmp_path / "merged.json"
    done = merge(out, tmp_path)
    assert done.returncode == 0, done.stderr
    for bad, why in (("b-2", "cut short"), ("c-3", "does not start"), ("d-4", "not a trace event")):
        assert f"libreduce-{bad}.json: " in done.stderr and why in done.stderr, done.stderr
    events = json.loads(out.read_text())
    assert [e["name"] for e in events if e["ph"] == "X"] == ["AllReduce"]
    assert {e["pid"] for e in events} == {1}
    nothing = merge(tmp_path / "none.json", tmp_path / "missing-dir")
    assert nothing.returncode == 1 and "no libreduce-*.json timeline" not in nothing.stdout
