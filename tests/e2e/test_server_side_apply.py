"""Server-side apply with the real kubectl (`apply --server-side`) and the official Python client."""

from __future__ import annotations

from pathlib import Path

import yaml
from kubernetes import client, config, dynamic

from tests.e2e.conftest import KubeCluster, wait_until
from tests.e2e.test_kubectl import write
from tests.e2e.test_kubectl_fidelity import deployment


def live_deployment(cluster: KubeCluster, name: str, namespace: str) -> dict:
    return cluster.kubectl_json("get", "deployment", name, "-n", namespace, "--show-managed-fields")


def managers(obj: dict) -> set[tuple[str, str]]:
    """Who manages the object's fields, leaving out the deployment controller's own status entry."""
    return {(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields", [])
            if e.get("subresource") != "status"}


def fields_of(obj: dict, manager: str, operation: str) -> dict:
    for entry in obj["metadata"]["managedFields"]:
        if (entry["manager"], entry["operation"]) == (manager, operation):
            return entry["fieldsV1"]
    raise AssertionError(f"no {operation} entry of {manager}: {managers(obj)}")


def test_server_side_apply_creates_then_reports_conflicts_until_forced(cluster: KubeCluster, namespace: str,
                                                                       tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", deployment("ssa", 2))
    created = cluster.kubectl("apply", "--server-side", "-n", namespace, "-f", str(path))
    assert "deployment.apps/ssa serverside-applied" in created.stdout
    live = live_deployment(cluster, "ssa", namespace)
    assert managers(live) == {("kubectl", "Apply")}
    assert "f:replicas" in fields_of(live, "kubectl", "Apply")["f:spec"]

    cluster.kubectl("scale", "deployment/ssa", "--replicas=5", "-n", namespace)
    scaled = live_deployment(cluster, "ssa", namespace)
    scalers = [e for e in scaled["metadata"]["managedFields"] if e.get("subresource") == "scale"]
    assert scalers and scalers[0]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}

    refused = cluster.kubectl("apply", "--server-side", "-n", namespace, "-f", str(path), expect_failure=True)
    assert "Apply failed with 1 conflict" in refused.stderr and ".spec.replicas" in refused.stderr
    assert "--force-conflicts" in refused.stderr  # kubectl's advice, printed for a 409 with causes
    assert live_deployment(cluster, "ssa", namespace)["spec"]["replicas"] == 5

    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-n", namespace, "-f", str(path))
    forced = live_deployment(cluster, "ssa", namespace)
    assert forced["spec"]["replicas"] == 2
    assert all(e.get("subresource") != "scale" for e in forced["metadata"]["managedFields"])


def test_server_side_apply_of_an_unchanged_file_keeps_the_resource_version(cluster: KubeCluster, namespace: str,
                                                                          tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", deployment("same", 1))
    cluster.kubectl("apply", "--server-side", "-n", namespace, "-f", str(path))
    # the deployment controller writes the status of a new deployment: wait until it has
    wait_until(lambda: live_deployment(cluster, "same", namespace).get("status", {}).get("observedGeneration") == 1,
               "the deployment controller to record the deployment")
    before = live_deployment(cluster, "same", namespace)["metadata"]["resourceVersion"]
    cluster.kubectl("apply", "--server-side", "-n", namespace, "-f", str(path))
    after = live_deployment(cluster, "same", namespace)["metadata"]["resourceVersion"]
    assert before == after


def test_moving_from_client_side_to_server_side_apply_keeps_ownership(cluster: KubeCluster, namespace: str,
                                                                      tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", deployment("moved", 2))
    cluster.kubectl("apply", "-n", namespace, "-f", str(path))
    before = live_deployment(cluster, "moved", namespace)
    assert ("kubectl-client-side-apply", "Update") in managers(before)

    write(tmp_path, "d.yaml", deployment("moved", 3))
    result = cluster.kubectl("apply", "--server-side", "-n", namespace, "-f", str(path))
    assert "serverside-applied" in result.stdout
    after = live_deployment(cluster, "moved", namespace)
    assert after["spec"]["replicas"] == 3
    # kubectl hands the client-side applier's fields to its server-side manager (a JSON patch of
    # managedFields, which the server must accept as written)
    assert ("kubectl-client-side-apply", "Update") not in managers(after)
    assert "f:replicas" in fields_of(after, "kubectl", "Apply")["f:spec"]


def test_server_side_dry_run_shows_the_result_and_stores_nothing(cluster: KubeCluster, namespace: str,
                                                                 tmp_path: Path) -> None:
    path = write(tmp_path, "d.yaml", deployment("dry", 1))
    out = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-n", namespace, "-f", str(path),
                          "-o", "yaml", "--show-managed-fields").stdout
    assert yaml.safe_load(out)["metadata"]["managedFields"][0]["manager"] == "kubectl"
    assert cluster.kubectl("get", "deployment", "dry", "-n", namespace, expect_failure=True)


def test_the_python_client_applies_server_side(cluster: KubeCluster, namespace: str) -> None:
    api_client = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    with api_client:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py", "namespace": namespace},
                "data": {"a": "1"}}
        dyn = dynamic.DynamicClient(api_client)
        configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
        created = configmaps.server_side_apply(body=body, namespace=namespace, field_manager="py-tool")
        assert created.data.a == "1"
        core = client.CoreV1Api(api_client)
        other = {**body, "data": {"a": "2"}}
        try:
            core.patch_namespaced_config_map("py", namespace, other, field_manager="other",
                                             _content_type="application/apply-patch+yaml")
        except client.ApiException as exc:
            assert exc.status == 409 and "py-tool" in exc.body
        else:
            raise AssertionError("a conflicting apply was accepted")
        forced = core.patch_namespaced_config_map("py", namespace, other, field_manager="other", force=True,
                                                  _content_type="application/apply-patch+yaml")
        assert forced.data == {"a": "2"}
        owners = {e.manager for e in forced.metadata.managed_fields}
        assert owners == {"other"}  # py-tool owned nothing else, so its entry is gone
