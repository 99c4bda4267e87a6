"""Jobs and CronJobs running real busybox containers on containerd nodes: a Job that succeeds, one whose pods
keep failing until its backoff limit, and `kubectl create job --from=cronjob/NAME`, with `kubectl logs job/NAME`
showing what the containers printed."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.e2e.conftest import KubeCluster

pytestmark = pytest.mark.e2e

JOB_TIMEOUT = 40  # seconds; the failing Job waits 10 s (kube's first pod-failure back-off) before its retry


def job(name: str, script: str, **spec: Any) -> str:
    return yaml.safe_dump({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {
        **spec, "template": {"spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                                      "containers": [{"name": "main", "image": "busybox",
                                                      "command": ["sh", "-c", script]}]}}}})


def wait_job(cluster: KubeCluster, ns: str, name: str, condition: str) -> dict[str, Any]:
    cluster.kubectl("wait", "-n", ns, f"--for=condition={condition}", f"job/{name}", f"--timeout={JOB_TIMEOUT}s",
                    timeout=JOB_TIMEOUT + 10)
    return dict(cluster.kubectl_json("get", "job", name, "-n", ns))


def job_row(cluster: KubeCluster, ns: str, name: str) -> list[str]:
    """NAME STATUS COMPLETIONS DURATION AGE of `kubectl get job NAME`."""
    return cluster.kubectl("get", "job", name, "-n", ns, "--no-headers").stdout.split()


def pod_phases(cluster: KubeCluster, ns: str, name: str) -> list[str]:
    pods = cluster.kubectl_json("get", "pods", "-n", ns, "-l", f"batch.kubernetes.io/job-name={name}")["items"]
    return sorted(p["status"]["phase"] for p in pods)


def test_a_job_completes_and_its_logs_show_the_output(nodes_cluster: KubeCluster, ns: str) -> None:
    nodes_cluster.apply_manifest(job("hello", "echo done; exit 0"), ns)
    found = wait_job(nodes_cluster, ns, "hello", "complete")
    assert found["status"]["succeeded"] == 1
    assert job_row(nodes_cluster, ns, "hello")[:3] == ["hello", "Complete", "1/1"]
    assert pod_phases(nodes_cluster, ns, "hello") == ["Succeeded"]
    assert nodes_cluster.kubectl("logs", "job/hello", "-n", ns).stdout == "done\n"


def test_a_job_that_keeps_failing_stops_at_its_backoff_limit(nodes_cluster: KubeCluster, ns: str) -> None:
    nodes_cluster.apply_manifest(job("boom", "echo failing; exit 1", backoffLimit=1), ns)
    found = wait_job(nodes_cluster, ns, "boom", "failed")
    failed = next(c for c in found["status"]["conditions"] if c["type"] == "Failed")
    assert (failed["reason"], failed["message"]) == ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert found["status"]["failed"] == 2
    assert job_row(nodes_cluster, ns, "boom")[:3] == ["boom", "Failed", "0/1"]
    assert pod_phases(nodes_cluster, ns, "boom") == ["Failed", "Failed"]
    assert "failing" in nodes_cluster.kubectl("logs", "job/boom", "-n", ns).stdout


def test_create_job_from_a_cron_job_runs_its_template(nodes_cluster: KubeCluster, ns: str) -> None:
    nodes_cluster.kubectl("create", "cronjob", "nightly", "-n", ns, "--image=busybox", "--schedule=0 3 * * *",
                          "--", "sh", "-c", "echo from the cron job")
    created = nodes_cluster.kubectl("create", "job", "now", "--from=cronjob/nightly", "-n", ns).stdout
    assert "job.batch/now created" in created
    found = wait_job(nodes_cluster, ns, "now", "complete")
    assert found["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert nodes_cluster.kubectl("logs", "job/now", "-n", ns).stdout == "from the cron job\n"
    cron_row = nodes_cluster.kubectl("get", "cronjob", "nightly", "-n", ns, "--no-headers").stdout.split()
    assert cron_row[:10] == ["nightly", "0", "3", "*", "*", "*", "<none>", "False", "0", "<none>"]
