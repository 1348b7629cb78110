# SPDX-License-Identifier: BSD-3-Clause
"""docs/grafana/libreduce.json against the code: a Grafana dashboard whose every query names only
series and labels that reduce-server and the workers emit (read from the C++ that writes them),
parses as PromQL (promtool), and leaves no emitted family without a panel."""

import json
import re
import shutil
import subprocess

import pytest

from conftest import ROOT

DASHBOARD = ROOT / "docs" / "grafana" / "libreduce.json"
EMITTERS = [ROOT / "src" / "reduction_server" / "reducer_metrics.cc",
            ROOT / "src" / "collectives" / "worker_metrics.cc"]
METRICS_TEXT = ROOT / "src" / "common" / "metrics_text.cc"
# Labels Prometheus attaches to every scraped series.
TARGET_LABELS = {"instance", "job"}
# Identifiers in a query: our families and the process_* pair the reducer exports.
USED_NAME = re.compile(r"\b((?:libreduce|process)_[A-Za-z0-9_:]*)")
LITERAL_NAME = re.compile(r'"((?:libreduce|process)_[a-z0-9_]+)"')


def emitted_series():
    """{family: [series names a query can select]}: a histogram family only through the suffixes
    TextWriter::histogram appends, every other family under its own name (counters are written
    with their _total)."""
    suffixes = re.findall(r'name \+ "(_[a-z]+)"', METRICS_TEXT.read_text())
    assert sorted(suffixes) == ["_bucket", "_count", "_sum"], suffixes
    families = {}
    for source in EMITTERS:
        text = source.read_text()
        histograms = set(re.findall(r'"([a-z0-9_]+)"\s*,\s*"histogram"', text))
        for name in LITERAL_NAME.findall(text):
            families[name] = [name + s for s in suffixes] if name in histograms else [name]
    return families


def emitted_labels():
    """Label names the code writes: {"name", value} pairs in the emitters, le on buckets."""
    labels = {"le"} if '"le"' in METRICS_TEXT.read_text() else set()
    for source in EMITTERS:
        for name in re.findall(r'\{\s*"([a-z][a-z0-9_]*)"\s*,', source.read_text()):
            if not USED_NAME.fullmatch(name):  # a metric's entry in a table, not a label
                labels.add(name)
    return labels


def queries(dashboard):
    """(where, PromQL) of every panel target and query variable."""
    out = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            out.append((f"panel {panel['title']!r} {target['refId']}", target["expr"]))
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            out.append((f"variable {var['name']}", var["query"]))
    return out


def labels_in(query):
    found = set(re.findall(r"\b([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)\s*\"", query))
    for group in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)",
                            query):
        found.update(label.strip() for label in group.split(",") if label.strip())
    found.update(re.findall(r"label_values\(.*,\s*(\w+)\s*\)", query))
    return found


@pytest.fixture(scope="module")
def dashboard():
    return json.loads(DASHBOARD.read_text())


def test_is_a_grafana_dashboard(dashboard):
    assert dashboard["title"] and dashboard["uid"]
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert {"instance", "slurm_job_id", "comm_name"} <= variables.keys()
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), ids
    rows = [p for p in dashboard["panels"] if p["type"] == "row"]
    assert len(rows) >= 2
    for panel in dashboard["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24 and pos["h"] > 0, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        # Every query goes to the chosen Prometheus, so the file imports into any Grafana.
        for source in [panel] + panel["targets"]:
            assert source["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    for var in variables.values():
        if var["type"] == "query":
            assert var["datasource"]["uid"] == "${datasource}", var["name"]


def test_queries_name_only_what_the_code_emits(dashboard):
    families = emitted_series()
    series = {s for names in families.values() for s in names}
    labels = emitted_labels() | TARGET_LABELS
    # The reading of the sources itself: a change there that it missed fails here, not silently.
    assert families["libreduce_collective_seconds"][0] == "libreduce_collective_seconds_bucket"
    assert "libreduce_reducer_received_bytes_total" in series
    assert {"cause", "comm", "slurm_job_id", "comm_name", "collective", "le"} <= labels
    wrong = []
    for where, query in queries(dashboard):
        names = USED_NAME.findall(query)
        assert names, f"{where}: no libreduce series in {query!r}"
        wrong += [f"{where}: series {n}" for n in names if n not in series]
        wrong += [f"{where}: label {n}" for n in labels_in(query) - labels]
    assert not wrong, "not emitted by src/:\n" + "\n".join(wrong)


def test_every_family_has_a_panel(dashboard):
    used = {n for _, query in queries(dashboard) for n in USED_NAME.findall(query)}
    missing = [f for f, names in emitted_series().items() if not used & set(names)]
    assert not missing, f"families the code emits that no panel shows: {missing}"


@pytest.mark.skipif(shutil.which("promtool") is None, reason="no promtool (Debian's package "
                    "'prometheus', which scripts/setup.sh installs)")
def test_queries_parse_as_promql(dashboard, tmp_path):
    # Grafana's interval variables as a duration, the others as the All value.
    rules, wheres = [], []
    for i, (where, query) in enumerate(queries(dashboard)):
        if where.startswith("variable"):
            query = re.fullmatch(r"label_values\((.*),\s*\w+\s*\)", query).group(1)
        query = re.sub(r"\$__\w+", "1m", query)
        query = re.sub(r"\$\w+", ".*", query)
        rules.append({"record": f"dashboard:query_{i}", "expr": query})
        wheres.append(where)
    path = tmp_path / "rules.yml"  # JSON is YAML
    path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))
    check = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True,
                           text=True, timeout=60)
    output = check.stdout + check.stderr
    named = [wheres[int(i)] for i in re.findall(r"dashboard:query_(\d+)", output)]
    assert check.returncode == 0, f"{named}: {output}"
