#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks the environment reducectl gives a replica; run as the replica's command.

Reads CLUSTER_SPEC (Vertex AI) and TF_CONFIG (TensorFlow) and checks that they agree with each
other and with torchrun's variables (RANK, WORLD_SIZE, LOCAL_*, MASTER_*), the libreduce
settings (LIBREDUCE_REDUCERS, LIBREDUCE_COMM_ID, LIBREDUCE_SECRET_FILE; never LIBREDUCE_SECRET)
and the AIP_* / CLOUD_ML_* variables.

Prints "env ok: <task type> <index> rank=<RANK or ->" and exits 0, or prints each failed check
to stderr and exits 1.

Options:
  --expect-world N  the job has N ranks (primary + workers): WORLD_SIZE must be N
  --write DIR       also write DIR/<task type>-<index>.json with the parsed values, so a test can
                    compare what the replicas saw
"""

import argparse
import json
import os
import stat
import sys

POOLS = {f"workerpool{n}": n for n in range(4)}  # CLUSTER_SPEC's task types
TF_TYPES = {0: "chief", 1: "worker", 2: "ps", 3: "evaluator"}
TORCH_VARS = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR",
              "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT"]
SLURM_VARS = ["SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURMD_NODENAME",
              "SLURM_STEP_TASKS_PER_NODE", "SLURM_JOB_ID"]
AIP_VARS = ["AIP_MODEL_DIR", "AIP_CHECKPOINT_DIR", "AIP_TENSORBOARD_LOG_DIR"]


class Checker:
    """Collects failed checks instead of stopping at the first."""

    def __init__(self):
        self.failures = []

    def check(self, ok, message):
        if not ok:
            self.failures.append(message)
        return ok

    def equal(self, what, got, want):
        return self.check(got == want, f"{what} is {got!r}, expected {want!r}")


def parse_json_var(env, name, c):
    text = env.get(name)
    if not c.check(text is not None, f"{name} is not set"):
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        c.check(False, f"{name} is not valid JSON ({e}): {text!r}")
        return None
    c.check(isinstance(value, dict), f"{name} is not a JSON object")
    return value if isinstance(value, dict) else None


def field(obj, key):
    """obj[key] when it is a JSON object, else {}: a malformed layout fails checks, not Python."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def join_host_port(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def check_torch(env, pool, index, pools, c):
    """torchrun's variables: primary is rank 0, workers follow; rank 0's address is the master."""
    primary, workers = pools[0], pools[1]
    c.check(len(primary) <= 1, f"workerpool0 has {len(primary)} replicas; at most 1 allowed")
    want_rank = index if pool == 0 else (1 if primary else 0) + index
    want_world = len(primary) + len(workers)
    c.equal("RANK", env.get("RANK"), str(want_rank))
    c.equal("WORLD_SIZE", env.get("WORLD_SIZE"), str(want_world))
    check_placement(env, pool, bool(primary), c)
    rank0 = (primary or workers or [None])[0]
    master = join_host_port(env.get("MASTER_ADDR", ""), env.get("MASTER_PORT", ""))
    c.equal("MASTER_ADDR:MASTER_PORT", master, rank0)
    restarts = env.get("TORCHELASTIC_RESTART_COUNT", "")
    c.check(restarts.isdigit(), f"TORCHELASTIC_RESTART_COUNT is {restarts!r}, not a count")


def tasks_on_node(tasks_per_node, node):
    """Slurm's "2(x3),1" form: the tasks on node @node."""
    first = 0
    for item in tasks_per_node.split(","):
        tasks, _, repeat = item.partition("(x")
        count = int(repeat.rstrip(")")) if repeat else 1
        if node < first + count:
            return int(tasks)
        first += count
    return 0


def check_placement(env, pool, has_primary, c):
    """LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK: the local backend puts every rank on one host;
    under srun (the Slurm backend) they follow Slurm's placement, the primary's node first."""
    if "SLURM_PROCID" not in env:
        c.equal("LOCAL_RANK", env.get("LOCAL_RANK"), env.get("RANK"))
        c.equal("LOCAL_WORLD_SIZE", env.get("LOCAL_WORLD_SIZE"), env.get("WORLD_SIZE"))
        c.equal("NODE_RANK", env.get("NODE_RANK"), "0")
        return
    node = int(env.get("SLURM_NODEID", "0"))
    c.equal("LOCAL_RANK", env.get("LOCAL_RANK"), env.get("SLURM_LOCALID"))
    c.equal("LOCAL_WORLD_SIZE", env.get("LOCAL_WORLD_SIZE"),
            str(tasks_on_node(env.get("SLURM_STEP_TASKS_PER_NODE", ""), node)))
    c.equal("NODE_RANK", env.get("NODE_RANK"),
            str(node + (1 if pool == 1 and has_primary else 0)))


def check_tf_config(tf, pool, index, pools, c):
    """TF_CONFIG mirrors CLUSTER_SPEC; returns True when the reducers are listed as "ps"."""
    cluster = field(tf, "cluster")
    c.check(set(cluster) <= set(TF_TYPES.values()), f"TF_CONFIG cluster has keys {sorted(cluster)}")
    for n, name in TF_TYPES.items():
        if n == 2 and name not in cluster:
            continue  # the built-in reducers are not TensorFlow servers
        c.equal(f"TF_CONFIG cluster.{name}", cluster.get(name, []), pools[n])
    task = field(tf, "task")
    c.equal("TF_CONFIG task.type", task.get("type"), TF_TYPES[pool])
    c.equal("TF_CONFIG task.index", task.get("index"), index)
    c.equal("TF_CONFIG environment", tf.get("environment"), "cloud")
    return "ps" in cluster


def check_secret_file(env, c):
    path = env.get("LIBREDUCE_SECRET_FILE", "")
    if not c.check(path != "", "LIBREDUCE_SECRET_FILE is not set"):
        return
    try:
        st = os.stat(path)
    except OSError as e:
        c.check(False, f"LIBREDUCE_SECRET_FILE {path}: {e.strerror}")
        return
    c.check(stat.S_ISREG(st.st_mode), f"LIBREDUCE_SECRET_FILE {path} is not a regular file")
    mode = stat.S_IMODE(st.st_mode)
    c.check(mode == 0o600, f"LIBREDUCE_SECRET_FILE {path} has mode {mode:04o}, expected 0600")


def check_vertex_dirs(env, cluster_spec, c):
    dirs = [env.get(name, "") for name in AIP_VARS]
    for name, value in zip(AIP_VARS, dirs):
        c.check(value.endswith("/"), f"{name} is {value!r}: must end with '/'")
    parents = {os.path.dirname(value.rstrip("/")) for value in dirs}
    c.check(len(parents) == 1, f"AIP_* directories do not share a parent: {dirs}")
    job_id = env.get("CLOUD_ML_JOB_ID", "")
    c.check(job_id != "", "CLOUD_ML_JOB_ID is empty or not set")
    c.equal("CLUSTER_SPEC job.jobId", field(cluster_spec, "job").get("jobId"), job_id)


def check_environment(env, expect_world):
    """Returns (checker, summary of what was read)."""
    c = Checker()
    spec = parse_json_var(env, "CLUSTER_SPEC", c)
    tf = parse_json_var(env, "TF_CONFIG", c)
    if spec is None or tf is None:
        return c, None
    task = field(spec, "task")
    task_type, index = task.get("type", ""), task.get("index")
    pool = POOLS.get(task_type)
    if not c.check(pool is not None and type(index) is int,
                   f"CLUSTER_SPEC task is {task!r}: expected workerpool0..3 and an index"):
        return c, None
    pools = [field(spec, "cluster").get(f"workerpool{n}", []) for n in range(4)]
    c.check(0 <= index < len(pools[pool]),
            f"task index {index} is outside {task_type}'s {len(pools[pool])} replicas")
    c.equal("CLUSTER_SPEC environment", spec.get("environment"), "cloud")
    custom_reducers = check_tf_config(tf, pool, index, pools, c)
    is_rank = pool in (0, 1)
    if is_rank:
        check_torch(env, pool, index, pools, c)
        if not custom_reducers:
            c.equal("LIBREDUCE_REDUCERS", env.get("LIBREDUCE_REDUCERS"), ",".join(pools[2]))
        c.check(env.get("LIBREDUCE_COMM_ID", "") != "", "LIBREDUCE_COMM_ID is empty or not set")
    else:
        for name in TORCH_VARS:
            c.check(name not in env, f"{name} is set for a {task_type} replica, which is no rank")
    if pool != 3:  # evaluators do not talk to the reducers
        check_secret_file(env, c)
    c.check("LIBREDUCE_SECRET" not in env,
            "LIBREDUCE_SECRET is set: the secret must stay in its file")
    check_vertex_dirs(env, spec, c)
    if expect_world is not None:
        world = env.get("WORLD_SIZE") if is_rank else str(len(pools[0]) + len(pools[1]))
        c.equal("WORLD_SIZE" if is_rank else "ranks in CLUSTER_SPEC", world, str(expect_world))
    names = sorted(n for n in env if n in TORCH_VARS + AIP_VARS + SLURM_VARS
                   or n.startswith("LIBREDUCE_")
                   or n.startswith("CLOUD_ML_"))
    summary = {"type": task_type, "index": index, "cluster_spec": spec, "tf_config": tf,
               "env": {n: env[n] for n in names}}
    return c, summary


def write_summary(directory, summary):
    path = os.path.join(directory, f"{summary['type']}-{summary['index']}.json")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)  # readers never see half a file


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--expect-world", type=int, metavar="N")
    parser.add_argument("--write", metavar="DIR")
    args = parser.parse_args()
    c, summary = check_environment(dict(os.environ), args.expect_world)
    if c.failures:
        for failure in c.failures:
            print(f"env check failed: {failure}", file=sys.stderr)
        return 1
    if args.write:
        write_summary(args.write, summary)
    rank = summary["env"].get("RANK", "-")
    print(f"env ok: {summary['type']} {summary['index']} rank={rank}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
