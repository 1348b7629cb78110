# SPDX-License-Identifier: BSD-3-Clause
"""Markdown report of distributed_suite.py runs side by side (the first is the reference):

    python3 tests/python/torch_suite/compare.py gloo=G.json rs=R.json ring=N.json

Counts per run, then every test that passes with the reference and not with another run,
with that run's outcome and reason, and the tests that pass only with the other runs.
"""

import json
import sys
from collections import Counter

OUTCOMES = ("passed", "failed", "error", "skipped")


def main():
    runs = []
    for arg in sys.argv[1:]:
        label, path = arg.split("=", 1)
        outcomes = json.load(open(path))
        outcomes.pop("_about", None)
        runs.append((label, outcomes))
    print("| | " + " | ".join(OUTCOMES) + " |")
    print("|---|" + "---|" * len(OUTCOMES))
    for label, outcomes in runs:
        counts = Counter(v["result"] for v in outcomes.values())
        print("| %s | %s |" % (label, " | ".join(str(counts[o]) for o in OUTCOMES)))
    ref_label, ref = runs[0]
    for label, outcomes in runs[1:]:
        missing = [name for name, v in sorted(ref.items())
                   if v["result"] == "passed" and outcomes.get(name, {}).get("result") != "passed"]
        print("\n### Passing with %s, not with %s (%d)\n" % (ref_label, label, len(missing)))
        reasons = Counter()
        for name in missing:
            got = outcomes.get(name, {"result": "not run"})
            reason = (got.get("message") or "").strip().splitlines()
            reasons[(got["result"], reason[-1][:160] if reason else "")] += 1
            print("- `%s`: %s%s" % (name, got["result"],
                                    ": " + reason[-1][:160] if reason else ""))
        extra = [name for name, v in sorted(outcomes.items())
                 if v["result"] == "passed" and ref.get(name, {}).get("result") != "passed"]
        print("\nPassing with %s, not with %s: %d%s" % (label, ref_label, len(extra),
                                                        "".join("\n- `%s`" % n for n in extra)))
        failing = [name for name, v in sorted(outcomes.items())
                   if v["result"] in ("failed", "error")]
        print("\nFailing with %s (%d):" % (label, len(failing)))
        for name in failing:
            lines = (outcomes[name].get("message") or "").strip().splitlines()
            same = ref.get(name, {}).get("result") in ("failed", "error")
            print("- `%s`%s: %s" % (name, " (fails with %s too)" % ref_label if same else "",
                                    lines[-1][:200] if lines else ""))


if __name__ == "__main__":
    main()
