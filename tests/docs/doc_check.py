#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The doc check: every shell block in README.md and docs/ is run, or held by a test, or marked
as needing a cluster, so that what the docs show cannot drift from what the code does.

A fenced block tagged sh, bash or console must follow (on the line before its fence) one of:

  <!-- doc-check: run -->             this check runs the block with bash from the repository's
                                      root; it must exit 0. A ```text block right after it, marked
                                      <!-- doc-check: output -->, is its expected output: each of
                                      its lines must appear in what the block printed, in order,
                                      with "..." standing for any text.
  <!-- doc-check: tested-by PATH... --> the test files PATH run these commands: each command's
                                      program and every option it gives appear in one of them
                                      (shell built-ins such as export and cd are not programs).
  <!-- doc-check: cluster -->         the commands need hosts, a GPU or a cluster this check
                                      cannot have (listed when the check passes).

usage: doc_check.py [--root DIR] [--build DIR] [--timeout SEC] [FILE.md ...]
  (default FILEs: README.md and docs/*.md under --root)
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys

SHELL_TAGS = {"sh", "bash", "console", "shell"}
MARKER = re.compile(r"^<!--\s*doc-check:\s*(run|tested-by|cluster|output)\s*(.*?)\s*-->\s*$")


class Block:
    def __init__(self, path, line, tag, text, marker, argument):
        self.path, self.line, self.tag, self.text = path, line, tag, text
        self.marker, self.argument = marker, argument
        self.output = None  # the expected-output block that follows a run block

    def where(self):
        return f"{self.path}:{self.line}"


def blocks_of(path, display):
    """The fenced blocks of a markdown file, each with the marker on the line before it."""
    lines = open(path, encoding="utf-8").read().splitlines()
    found, i = [], 0
    while i < len(lines):
        fence = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        start, tag = i, fence.group(2)
        i += 1
        body = []
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i])
            i += 1
        i += 1
        previous = lines[start - 1].strip() if start > 0 else ""
        marker = MARKER.match(previous)
        found.append(Block(display, start + 1, tag, "\n".join(body),
                           marker.group(1) if marker else None,
                           marker.group(2) if marker else ""))
    return found


def commands_of(text):
    """The commands of a shell block: continuation lines joined, comments dropped."""
    commands, current = [], ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        commands.append(re.sub(r"\s+#\s.*$", "", current).strip())
        current = ""
    if current:
        commands.append(current.strip())
    return commands


BUILTINS = {"export", "cd", "source", ".", "set", "unset", "eval"}


def words_held(command, test_text):
    """The words of @command a test file must hold to be said to run it: its program (a path's
    last part) and every --option; what is missing is returned."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if words and words[0] in BUILTINS:
        return []
    missing = []
    programs = [w for w in words if "=" not in w.split("/")[0] and not w.startswith("-")][:1]
    # "python3 -m venv": the program is the module (a test runs it with its own interpreter).
    if programs and re.match(r"python[\d.]*$", os.path.basename(programs[0])):
        at = words.index(programs[0])
        if words[at + 1:at + 2] == ["-m"] and len(words) > at + 2:
            programs = [words[at + 2]]
    for word in programs:
        name = os.path.basename(word)
        if name not in test_text:
            missing.append(name)
    for word in words:
        if word.startswith("--"):
            option = word.split("=")[0]
            if option not in test_text:
                missing.append(option)
    return missing


def expected_lines_found(expected, printed):
    """Each expected line in order within @printed ("..." matches anything); the first line
    not found, or None."""
    at = 0
    printed_lines = printed.splitlines()
    for want in expected.splitlines():
        if not want.strip():
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in want.strip().split("...")))
        while at < len(printed_lines) and not pattern.search(printed_lines[at]):
            at += 1
        if at == len(printed_lines):
            return want
        at += 1
    return None


def run_block(block, root, build, timeout):
    """Runs a block from the repository's root, build/ meaning the build directory; the
    failure as text, or None."""
    script = block.text
    if os.path.realpath(build) != os.path.realpath(os.path.join(root, "build")):
        script = re.sub(r"(?<![\w/.-])build/", build.rstrip("/") + "/", script)
    try:
        proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=root,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"did not finish within {timeout} s"
    printed = proc.stdout
    if proc.returncode != 0:
        return f"exit status {proc.returncode}; it printed:\n{printed[-2000:]}"
    if block.output is not None:
        missing = expected_lines_found(block.output.text, printed)
        if missing is not None:
            return (f"the output shown at {block.output.where()} differs: no line matches "
                    f"'{missing.strip()}'; it printed:\n{printed[-2000:]}")
    return None


def check(files, root, build, timeout):
    failures, cluster, ran, held = [], [], 0, 0
    for path in files:
        display = os.path.relpath(path, root)
        blocks = blocks_of(path, display)
        for i, block in enumerate(blocks):
            if block.marker == "output":
                if i == 0 or blocks[i - 1].marker != "run":
                    failures.append(f"{block.where()}: an output block must follow a run block")
                continue
            if block.marker == "run" and i + 1 < len(blocks) and blocks[i + 1].marker == "output":
                block.output = blocks[i + 1]
        for block in blocks:
            if block.tag not in SHELL_TAGS:
                continue
            if block.marker is None or block.marker == "output":
                failures.append(f"{block.where()}: a shell block without a doc-check marker "
                                "(run, tested-by PATH or cluster; see tests/docs/doc_check.py)")
            elif block.marker == "cluster":
                cluster.extend(f"{block.where()}: {c}" for c in commands_of(block.text))
            elif block.marker == "tested-by":
                paths = block.argument.split()
                absent = [p for p in paths if not os.path.isfile(os.path.join(root, p))]
                if not paths or absent:
                    failures.append(f"{block.where()}: tested-by names no file of the tree: "
                                    f"'{' '.join(absent)}'")
                    continue
                test_text = "\n".join(open(os.path.join(root, p), encoding="utf-8").read()
                                      for p in paths)
                for command in commands_of(block.text):
                    missing = words_held(command, test_text)
                    if missing:
                        failures.append(f"{block.where()}: {block.argument} does not run "
                                        f"'{command}' (it lacks {', '.join(missing)})")
                held += 1
            else:
                print(f"doc-check: running {block.where()}", flush=True)
                why = run_block(block, root, build, timeout)
                if why:
                    failures.append(f"{block.where()}: {why}")
                ran += 1
    return failures, cluster, ran, held


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(here)))
    parser.add_argument("--build", default=None)
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    build = os.path.abspath(args.build or os.path.join(root, "build"))
    files = args.files or [os.path.join(root, "README.md")] + sorted(
        glob.glob(os.path.join(root, "docs", "*.md")))
    failures, cluster, ran, held = check([os.path.abspath(f) for f in files], root, build,
                                         args.timeout)
    for c in cluster:
        print(f"doc-check: needs a cluster: {c}")
    if failures:
        for f in failures:
            print(f"doc-check: FAILED {f}", file=sys.stderr)
        print(f"doc-check: {len(failures)} problem(s)", file=sys.stderr)
        return 1
    print(f"doc-check: passed: {ran} blocks run, {held} held by tests, "
          f"{len(cluster)} commands need a cluster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
