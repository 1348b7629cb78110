"""`reducectl render --backend kubernetes`: the manifests of several specs validated against a
strict schema of what JobSet, Job, Pod and Secret accept (tests/orchestrator/kube_schema.json:
an unknown field is an error), parsed by kubectl offline where it is installed, and what they
promise checked (DNS names, ports, environment, resources, policies). `run --backend
kubernetes` without a reachable cluster fails clearly.
"""

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
    SCHEMA = json.load(f)
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
                jsonschema.validate(doc, SCHEMA)

    def test_the_schema_refuses_unknown_fields(self):
        _, docs = self.render(QUICKSTART)
        jobset = docs[1]
        _, pod, c = container(jobset, "workers")
        c["imagePullPolicyy"] = "Never"
        with self.assertRaises(jsonschema.ValidationError):
            jsonschema.validate(jobset, SCHEMA)
        del c["imagePullPolicyy"]
        pod["restartPolicy"] = "Sometimes"
        with self.assertRaises(jsonschema.ValidationError):
            jsonschema.validate(jobset, SCHEMA)

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
