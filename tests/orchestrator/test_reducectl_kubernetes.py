# SPDX-License-Identifier: BSD-3-Clause
"""`reducectl render --backend kubernetes`: the manifests of several specs validated against
what the APIs accept: the JobSet (with its Job and Pod templates) against JobSet's published
CRD (schemas/), the Secret against kube_schema.json, objects closed in both (an unknown field is
an error, as under the API server's strict field validation); parsed by kubectl offline, and
what they promise checked (DNS names, ports, environment, resources, policies). `run --backend
kubernetes` without a reachable cluster fails clearly.
"""

import gzip
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import jsonschema
import yaml

from test_reducectl_jobs import REDUCECTL, SOURCE, main

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "kube_schema.json")) as f:
    SECRET_SCHEMA = json.load(f)
JOBSET_CRD = os.path.join(HERE, "schemas", "jobset.x-k8s.io_jobsets-v0.12.0.yaml.gz")


def closed(schema):
    """The schema with every object that lists its properties closed to others, as the API
    server's strict field validation treats them (x-kubernetes-preserve-unknown-fields stays
    open)."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def jobset_schema():
    with gzip.open(JOBSET_CRD, "rt") as f:
        crd = yaml.safe_load(f)
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2"]
    return closed(version["schema"]["openAPIV3Schema"])


JOBSET_SCHEMA = jobset_schema()


def validate(doc):
    """Raises jsonschema.ValidationError for what the API would refuse. Beyond the schemas: a
    Job's pod template may restart only OnFailure or Never (batch/v1 Job validation)."""
    if doc["kind"] == "Secret":
        jsonschema.validate(doc, SECRET_SCHEMA)
        return
    assert (doc["apiVersion"], doc["kind"]) == ("jobset.x-k8s.io/v1alpha2", "JobSet"), doc
    jsonschema.Draft4Validator(JOBSET_SCHEMA).validate(doc)
    for rjob in doc["spec"]["replicatedJobs"]:
        policy = rjob["template"]["spec"]["template"]["spec"].get("restartPolicy")
        if policy not in ("OnFailure", "Never"):
            raise jsonschema.ValidationError(
                f"{rjob['name']}: a Job's pods restart OnFailure or Never, not {policy!r}")
VERTEX_JOB = os.path.join(SOURCE, "examples/jobs/vertex_custom_job.json")
QUICKSTART = os.path.join(SOURCE, "examples/jobs/quickstart.yaml")


def container(jobset, job):
    [rjob] = [r for r in jobset["spec"]["replicatedJobs"] if r["name"] == job]
    pod = rjob["template"]["spec"]["template"]["spec"]
    [c] = pod["containers"]
    return rjob, pod, c


def env_of(c):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}


class KubernetesTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="reducectl-kube-")
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def render(self, spec_path, *flags):
        proc = subprocess.run([REDUCECTL, "render", "--backend", "kubernetes", spec_path,
                               *flags], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        docs = [d for d in yaml.safe_load_all(proc.stdout) if d is not None]
        return proc.stdout, docs

    def write_spec(self, spec):
        path = os.path.join(self.dir, "job.json")
        with open(path, "w") as f:
            json.dump(spec, f)
        return path

    def specs(self):
        """The quickstart, a Vertex CustomJob with containerSpec and machineSpec on every pool,
        a job with evaluators and restarts, and one without a primary or reducers."""
        evaluators = self.write_spec({
            "displayName": "eval-job", "scheduling": {"maxRestarts": 3, "timeout": "1h"},
            "libreduce": {"chunk_bytes": "1M"},
            "workerPoolSpecs": [
                {"replicaCount": 1, "command": ["python3", "train.py"]},
                {"replicaCount": 2, "command": ["python3", "train.py"],
                 "machineSpec": {"machineType": "g2-standard-24"}},
                {"replicaCount": 2},
                {"replicaCount": 1, "containerSpec": {"imageUri": "example.com/eval:1",
                                                      "args": ["--every", "600"]}}]})
        spec_dir = os.path.join(self.dir, "ring")
        os.mkdir(spec_dir)
        ring = os.path.join(spec_dir, "ring.json")
        with open(ring, "w") as f:
            json.dump({"displayName": "Ring_Job.2", "workerPoolSpecs": [
                {}, {"replicaCount": 4, "containerSpec": {"imageUri": "example.com/t:2"}}]}, f)
        return [QUICKSTART, VERTEX_JOB, evaluators, ring]

    def test_manifests_match_what_the_apis_accept(self):
        for spec in self.specs():
            _, docs = self.render(spec)
            self.assertEqual([d["kind"] for d in docs], ["Secret", "JobSet"], spec)
            for doc in docs:
                validate(doc)

    def test_the_schema_refuses_unknown_fields(self):
        _, docs = self.render(QUICKSTART)
        jobset = docs[1]
        _, pod, c = container(jobset, "workers")
        c["imagePullPolicyy"] = "Never"
        with self.assertRaises(jsonschema.ValidationError):
            validate(jobset)
        del c["imagePullPolicyy"]
        c["ports"][0]["containerPort"] = "eighty"  # a wrong type
        with self.assertRaises(jsonschema.ValidationError):
            validate(jobset)
        del c["ports"]
        pod["restartPolicy"] = "Sometimes"
        with self.assertRaises(jsonschema.ValidationError):
            validate(jobset)
        secret = docs[0]
        secret["metadata"]["lables"] = {}
        with self.assertRaises(jsonschema.ValidationError):
            validate(secret)

    def test_kubectl_parses_them_offline(self):
        if shutil.which("kubectl") is None:
            self.skipTest("kubectl is not installed")
        for n, spec in enumerate(self.specs()):
            text, _ = self.render(spec)
            kdir = os.path.join(self.dir, f"k{n}")
            os.mkdir(kdir)
            with open(os.path.join(kdir, "job.yaml"), "w") as f:
                f.write(text)
            with open(os.path.join(kdir, "kustomization.yaml"), "w") as f:
                f.write("resources: [job.yaml]\n")
            proc = subprocess.run(["kubectl", "kustomize", kdir], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("kind: JobSet", proc.stdout)

    def test_names_ports_environment_and_policies(self):
        _, docs = self.render(VERTEX_JOB, "--job-id", "DDP-Vertex_20261130")
        secret, jobset = docs
        name = jobset["metadata"]["name"]
        self.assertEqual(name, "ddp-vertex-20261130")
        self.assertEqual(jobset["spec"]["network"]["subdomain"], name)
        self.assertEqual(len(secret["stringData"]["secret"]), 64)
        jobs = [r["name"] for r in jobset["spec"]["replicatedJobs"]]
        self.assertEqual(jobs, ["reducers", "primary", "workers"])  # reducers first
        self.assertEqual(jobset["spec"]["successPolicy"],
                         {"operator": "Any", "targetReplicatedJobs": ["primary"]})
        rjob, pod, reducer = container(jobset, "reducers")
        self.assertNotIn("dependsOn", rjob)
        self.assertEqual(reducer["image"], "localhost/libreduce-reducer:latest")  # Vertex's mapped
        self.assertEqual(reducer["args"], ["--listen", "0.0.0.0:29400"])
        self.assertEqual(rjob["template"]["spec"]["completions"], 4)
        self.assertEqual(reducer["resources"]["requests"], {"cpu": "16", "memory": "14752Mi"})
        self.assertIn("readinessProbe", reducer)
        rjob, pod, worker = container(jobset, "workers")
        self.assertEqual(rjob["dependsOn"], [{"name": "reducers", "status": "Ready"}])
        self.assertEqual(rjob["template"]["spec"]["completionMode"], "Indexed")
        self.assertEqual(worker["resources"]["limits"]["nvidia.com/gpu"], "1")
        self.assertEqual(pod["volumes"][0]["secret"]["defaultMode"], 0o600)
        env = env_of(worker)
        reducers = ",".join(f"{name}-reducers-0-{i}.{name}:29400" for i in range(4))
        self.assertEqual(env["LIBREDUCE_REDUCERS"], reducers)
        self.assertEqual(env["MASTER_ADDR"], f"{name}-primary-0-0.{name}")
        self.assertEqual(env["MASTER_PORT"], "29500")
        self.assertEqual(env["WORLD_SIZE"], "4")
        self.assertEqual(env["DATA_DIR"], "/data")
        self.assertEqual(env["LIBREDUCE_SECRET_FILE"], "/var/run/reducectl/secret/secret")
        self.assertEqual(env["LIBREDUCE_COMM_ID"],
                         "DDP-Vertex_20261130-attempt$(REDUCECTL_RESTART_ATTEMPT)")
        self.assertNotIn("RANK", env)  # index + 1: the shell computes it
        self.assertEqual(worker["command"][:2], ["/bin/sh", "-c"])
        self.assertEqual(worker["args"], ["python3", "-m", "trainer.task", "--epochs", "6"])
        cluster_spec = env["CLUSTER_SPEC"].replace("$(REDUCECTL_INDEX)", "2")
        parsed = json.loads(cluster_spec)
        self.assertEqual(parsed["task"], {"type": "workerpool1", "index": 2, "trial": ""})
        self.assertEqual(parsed["cluster"]["workerpool1"][2], f"{name}-workers-0-2.{name}:29500")
        self.assertEqual(env["AIP_MODEL_DIR"], "/shared/runs/DDP-Vertex_20261130/model/")
        _, _, primary = container(jobset, "primary")
        self.assertEqual(env_of(primary)["RANK"], "$(REDUCECTL_INDEX)")

    def test_a_worker_pool_without_a_command_is_refused_with_the_reason(self):
        spec = self.write_spec({"displayName": "x", "workerPoolSpecs": [
            {"replicaCount": 1, "containerSpec": {"imageUri": "example.com/t:1"}},
            {"replicaCount": 2, "containerSpec": {"imageUri": "example.com/t:1"}}]})
        proc = subprocess.run([REDUCECTL, "render", "--backend", "kubernetes", spec],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("give containerSpec.command", proc.stderr)

    def test_run_without_a_cluster_fails_clearly(self):
        if shutil.which("kubectl") is None:
            self.skipTest("kubectl is not installed")
        env = dict(os.environ, KUBECONFIG=os.path.join(self.dir, "no-such-config"))
        spec = self.write_spec({"displayName": "k", "baseOutputDirectory": self.dir,
                                "workerPoolSpecs": [{"replicaCount": 1, "command": ["true"]}]})
        proc = subprocess.run([REDUCECTL, "run", "--backend", "kubernetes", spec], env=env,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("no Kubernetes cluster is reachable through kubectl", proc.stderr)
        self.assertIn("FAILED", proc.stderr)


if __name__ == "__main__":
    main()
